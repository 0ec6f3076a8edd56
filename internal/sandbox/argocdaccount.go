package sandbox

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// HubArgoCDAccount is argocd-pull's own account in the hub's Argo CD, as docs/argocd-clients.md
// sets one up: an API key, and the right to get applications, nothing else. The controller asks
// the API server for an Application's manifests with its token (--argocd-server-token-file).
const HubArgoCDAccount = "argocd-pull"

// writeHubArgoCDAccount adds HubArgoCDAccount to the hub's argocd-cm and its policy to
// argocd-rbac-cm (both written by InstallArgoConfig).
func writeHubArgoCDAccount(ctx context.Context, hub *Cluster) error {
	c, err := hub.Client()
	if err != nil {
		return err
	}
	for name, data := range map[string]map[string]string{
		"argocd-cm":      {"accounts." + HubArgoCDAccount: "apiKey"},
		"argocd-rbac-cm": {"policy.csv": "p, " + HubArgoCDAccount + ", applications, get, *, allow\n"},
	} {
		cm := &corev1.ConfigMap{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: ArgoNamespace, Name: name}, cm); err != nil {
			return fmt.Errorf("argocd-pull's Argo CD account: %w", err)
		}
		if cm.Data == nil {
			cm.Data = map[string]string{}
		}
		for k, v := range data {
			cm.Data[k] = v
		}
		if err := c.Update(ctx, cm); err != nil {
			return fmt.Errorf("argocd-pull's Argo CD account: %w", err)
		}
	}
	return nil
}

// hubArgoCDToken logs in to the hub's API server as admin and makes an API token of
// HubArgoCDAccount (argocd account generate-token --account argocd-pull), written to file.
func hubArgoCDToken(ctx context.Context, s ArgoCDServer, file string) error {
	post := func(path, bearer string, body any, out any) error {
		data, err := json.Marshal(body)
		if err != nil {
			return err
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+s.Addr+path, bytes.NewReader(data))
		if err != nil {
			return err
		}
		req.Header.Set("Content-Type", "application/json")
		if bearer != "" {
			req.Header.Set("Authorization", "Bearer "+bearer)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		defer func() { _ = resp.Body.Close() }()
		answer, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("POST %s: %s: %s", path, resp.Status, answer)
		}
		return json.Unmarshal(answer, out)
	}
	var session, token struct {
		Token string `json:"token"`
	}
	if err := post("/api/v1/session", "", map[string]string{"username": "admin", "password": s.Password}, &session); err != nil {
		return fmt.Errorf("logging in to the hub's Argo CD as admin: %w", err)
	}
	// The account may take a moment to appear: argocd-server reads argocd-cm from its informer.
	var err error
	for deadline := time.Now().Add(30 * time.Second); ; {
		if err = post("/api/v1/account/"+HubArgoCDAccount+"/token", session.Token, map[string]string{"name": HubArgoCDAccount}, &token); err == nil && token.Token != "" {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the API token of argocd-pull's Argo CD account: %w", err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
	// A container mount (DEMO_IMAGE) owns the file: remove it before writing it anew.
	_ = os.Remove(file)
	return os.WriteFile(file, []byte(token.Token+"\n"), 0o600)
}
