package sandbox_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/argocd-pull/argocd-pull/internal/clusteraccess"
	"github.com/argocd-pull/argocd-pull/internal/sandbox"
)

// The hub Argo CD's web terminal (the TERMINAL tab of a Pod's panel) is a websocket to
// /terminal: Argo CD checks the Application's project and the exec RBAC, resolves the
// Application's destination, finds the Pod in the Application's tree by uid, reads the Pod there
// and runs a shell in it. These helpers open it as the UI does and read where its exec went from
// the apiservers' own audit logs (sandbox.Cluster.AuditLog).

// enableTerminal turns on the hub Argo CD's web terminal (argocd-cm exec.enabled, off by default)
// for the test; its end turns it off again.
func enableTerminal(t *testing.T, hub client.Client) {
	t.Helper()
	set := func(ctx context.Context, on bool) error {
		cm := &corev1.ConfigMap{}
		if err := hub.Get(ctx, types.NamespacedName{Namespace: sandbox.ArgoNamespace, Name: "argocd-cm"}, cm); err != nil {
			return err
		}
		if cm.Data == nil {
			cm.Data = map[string]string{}
		}
		if on {
			cm.Data["exec.enabled"] = "true"
		} else {
			delete(cm.Data, "exec.enabled")
		}
		return hub.Update(ctx, cm)
	}
	if err := set(ctx, true); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := set(context.Background(), false); err != nil {
			t.Errorf("turning the terminal off again: %v", err)
		}
	})
}

// terminalAnswer is what the hub's Argo CD answered a terminal: the handshake's HTTP status
// (101 when the websocket opened) and what it said, its error's text or the session's messages.
type terminalAnswer struct {
	status int
	said   string
}

// openTerminal opens the hub Argo CD's web terminal with the session token (argoCDSessionToken),
// on container of the Pod namespace/pod in the Application appNamespace/app of project, as the
// UI's TERMINAL tab does, and reads the session until the server closes it (or 20 s).
func openTerminal(t *testing.T, token, appNamespace, app, project, namespace, pod, container string) terminalAnswer {
	t.Helper()
	q := url.Values{"pod": {pod}, "container": {container}, "appName": {app}, "appNamespace": {appNamespace},
		"projectName": {project}, "namespace": {namespace}}
	u := url.URL{Scheme: "ws", Host: lab.ArgoCD.Addr, Path: "/terminal", RawQuery: q.Encode()}
	header := http.Header{"Cookie": {"argocd.token=" + token}}
	dialer := websocket.Dialer{HandshakeTimeout: 30 * time.Second}
	conn, resp, err := dialer.Dial(u.String(), header)
	if err != nil {
		if resp == nil {
			t.Fatalf("opening the terminal: %v", err)
		}
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		_ = resp.Body.Close()
		return terminalAnswer{status: resp.StatusCode, said: strings.TrimSpace(string(body))}
	}
	defer func() { _ = conn.Close() }()
	// The UI's first message: the terminal's size.
	if err := conn.WriteJSON(map[string]any{"operation": "resize", "rows": 24, "cols": 80}); err != nil {
		return terminalAnswer{status: resp.StatusCode, said: err.Error()}
	}
	var said []string
	_ = conn.SetReadDeadline(time.Now().Add(20 * time.Second))
	for {
		_, msg, err := conn.ReadMessage()
		if err != nil {
			var closed *websocket.CloseError
			if !errors.As(err, &closed) && !errors.Is(err, io.ErrUnexpectedEOF) && !strings.Contains(err.Error(), "EOF") {
				said = append(said, err.Error())
			}
			return terminalAnswer{status: resp.StatusCode, said: strings.Join(said, "\n")}
		}
		said = append(said, string(msg))
	}
}

// argoCDSessionToken logs in to the hub's Argo CD API server as the lab's admin, as the UI's
// login page does, and returns the session's token (the UI's argocd.token cookie).
func argoCDSessionToken(t *testing.T) string {
	t.Helper()
	body, _ := json.Marshal(map[string]string{"username": "admin", "password": lab.ArgoCD.Password})
	resp, err := http.Post("http://"+lab.ArgoCD.Addr+"/api/v1/session", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	var session struct {
		Token string `json:"token"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&session); err != nil || session.Token == "" {
		t.Fatalf("logging in to the hub's Argo CD: %s: %v", resp.Status, err)
	}
	return session.Token
}

// runInPod is one audited request to run something in a Pod (exec, attach, port-forward).
type runInPod struct {
	Stage string `json:"stage"`
	User  struct {
		Username string `json:"username"`
	} `json:"user"`
	ObjectRef struct {
		Namespace   string `json:"namespace"`
		Name        string `json:"name"`
		Subresource string `json:"subresource"`
	} `json:"objectRef"`
	ResponseStatus struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
	Received metav1.MicroTime `json:"requestReceivedTimestamp"`
}

func (r runInPod) String() string {
	return fmt.Sprintf("%s %s/%s by %s: %d", r.ObjectRef.Subresource, r.ObjectRef.Namespace, r.ObjectRef.Name, r.User.Username, r.ResponseStatus.Code)
}

// runsInPods reads c's audit log: each request to run something in a Pod received since since,
// once (its completed stage).
func runsInPods(t *testing.T, c *sandbox.Cluster, since time.Time) []runInPod {
	t.Helper()
	f, err := os.Open(c.AuditLog)
	if errors.Is(err, os.ErrNotExist) {
		return nil // no such request yet
	}
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	var runs []runInPod
	lines := bufio.NewScanner(f)
	lines.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for lines.Scan() {
		var r runInPod
		if err := json.Unmarshal(lines.Bytes(), &r); err != nil {
			t.Fatalf("%s: %v", c.AuditLog, err)
		}
		if (r.Stage == "ResponseComplete" || r.Stage == "Panic") && !r.Received.Time.Before(since) {
			runs = append(runs, r)
		}
	}
	if err := lines.Err(); err != nil {
		t.Fatal(err)
	}
	return runs
}

// markRunning writes, as a kubelet would, that the Pod's container is running: the lab's hub runs
// no kubelet, and Argo CD opens a terminal only in a running container.
func markRunning(ctx context.Context, t *testing.T, c client.Client, pod types.NamespacedName, container string) {
	t.Helper()
	p := &corev1.Pod{}
	if err := c.Get(ctx, pod, p); err != nil {
		t.Fatal(err)
	}
	now := metav1.Now()
	p.Status.Phase = corev1.PodRunning
	p.Status.StartTime = &now
	p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: container, Ready: true, Image: "registry.invalid/" + container,
		State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}}}}
	if err := c.Status().Update(ctx, p); err != nil {
		t.Fatal(err)
	}
}

// terminalReachesOnlyTheCluster opens the hub Argo CD's terminal on container of pod, a Pod of the
// Application app on cluster1 that its tree holds by uid, running on cluster1's node, and reads where the exec went: to
// cluster1's apiserver only, as the read-only ManagedServiceAccount, which refuses it (403) every
// time; no request to run anything in a Pod reaches the hub.
func terminalReachesOnlyTheCluster(ctx context.Context, t *testing.T, hub, cluster1 client.Client, app string, pod types.NamespacedName, container string) {
	t.Helper()
	enableTerminal(t, hub)
	since := time.Now().Add(-time.Second)
	account := "system:serviceaccount:" + clusteraccess.DefaultServiceAccountNamespace + ":argocd-pull"
	token := argoCDSessionToken(t)
	var answer terminalAnswer
	var onCluster1 []runInPod
	eventually(t, "the terminal's exec reaching cluster1 as the read-only account", 2*time.Minute, "hub-argocd-server.log", func() (bool, error) {
		answer = openTerminal(t, token, sandbox.ArgoNamespace, app, "default", pod.Namespace, pod.Name, container)
		onCluster1 = runsInPods(t, lab.Managed[0], since)
		return answer.status == http.StatusSwitchingProtocols && len(onCluster1) > 0,
			fmt.Errorf("the terminal answered %d %q; cluster1's audit: %v", answer.status, answer.said, onCluster1)
	})
	t.Logf("the terminal on %s answered %d %q; cluster1's audit log: %v", pod, answer.status, answer.said, onCluster1)
	for _, r := range onCluster1 {
		if r.User.Username != account || r.ResponseStatus.Code != http.StatusForbidden || r.ObjectRef.Subresource != "exec" || r.ObjectRef.Namespace != pod.Namespace || r.ObjectRef.Name != pod.Name {
			t.Errorf("cluster1 ran something in a Pod for the terminal other than a refused exec of %s as %s: %v", pod, account, r)
		}
	}
	if onHub := runsInPods(t, lab.Hub, since); len(onHub) > 0 {
		t.Errorf("the terminal ran something in a Pod of the hub: %v", onHub)
	}
}

// terminalReachesNoHubPod opens the hub Argo CD's terminal, through the pull-model Application
// app whose destination is the hub to Argo CD (the documents' in-cluster form), on a Pod running
// on the hub in the Application's destination namespace: the display tree holds no uid, so Argo
// CD finds no Pod of the Application, says so, and runs nothing on the hub.
func terminalReachesNoHubPod(t *testing.T, hub client.Client, app types.NamespacedName) {
	t.Helper()
	enableTerminal(t, hub)
	target := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: sandbox.ArgoNamespace, Name: "hub-terminal-target"},
		Spec: corev1.PodSpec{NodeName: "no-kubelet-hub", Containers: []corev1.Container{{Name: "shell", Image: "registry.invalid/shell"}}}}
	if err := hub.Create(ctx, target); err != nil {
		t.Fatal(err)
	}
	// A Pod bound to a node goes only when its kubelet says so, or at once with no grace period.
	t.Cleanup(func() { _ = hub.Delete(context.Background(), target, client.GracePeriodSeconds(0)) })
	markRunning(ctx, t, hub, client.ObjectKeyFromObject(target), "shell")
	since := time.Now().Add(-time.Second)
	token := argoCDSessionToken(t)
	var answer terminalAnswer
	eventually(t, "the terminal on the hub's Pod refused by the hub's Argo CD", time.Minute, "hub-argocd-server.log", func() (bool, error) {
		answer = openTerminal(t, token, app.Namespace, app.Name, "default", target.Namespace, target.Name, "shell")
		return answer.status != http.StatusNotFound, fmt.Errorf("%d %q", answer.status, answer.said)
	})
	t.Logf("the terminal on the hub's %s through %s answered %d %q", client.ObjectKeyFromObject(target), app, answer.status, answer.said)
	if answer.status != http.StatusBadRequest || !strings.Contains(answer.said, "Pod doesn't belong to specified app") {
		t.Errorf("the terminal on the hub's Pod through %s: %d %q, want 400 saying the Pod is not the Application's", app, answer.status, answer.said)
	}
	if onHub := runsInPods(t, lab.Hub, since); len(onHub) > 0 {
		t.Errorf("the terminal ran something in a Pod of the hub: %v", onHub)
	}
}
