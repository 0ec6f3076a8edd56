package clusteraccess

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var (
	now     = time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	account = Account{Cluster: "cluster1", Name: "argocd-pull", UID: "msa-uid", ServiceAccountNamespace: "open-cluster-management-agent-addon"}
)

func jwt(t *testing.T, claims map[string]any) string {
	t.Helper()
	payload, err := json.Marshal(claims)
	if err != nil {
		t.Fatal(err)
	}
	enc := base64.RawURLEncoding.EncodeToString
	return enc([]byte(`{"alg":"RS256","kid":"k"}`)) + "." + enc(payload) + "." + enc([]byte("signature"))
}

// tokenSecret is the Secret managed-serviceaccount's agent writes for account.
func tokenSecret(token string) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: account.Name, Namespace: account.Cluster,
			Labels:          map[string]string{IsManagedServiceAccountLabel: "true"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "authentication.open-cluster-management.io/v1beta1", Kind: "ManagedServiceAccount", Name: account.Name, UID: account.UID}}},
		Data: map[string][]byte{"token": []byte(token), "ca.crt": []byte("-----BEGIN CERTIFICATE-----\n...")},
	}
}

func TestDecideToken(t *testing.T) {
	good := jwt(t, map[string]any{"sub": account.Username(), "exp": now.Add(time.Hour).Unix()})
	tok, refusal := DecideToken(tokenSecret(good), account, now)
	if refusal.Refused() || tok.Value != good || !tok.Expires.Equal(now.Add(time.Hour)) {
		t.Fatalf("the agent's token: %+v, %+v; want it used, expiring in an hour", tok, refusal)
	}

	huge := tokenSecret(good)
	huge.Data["padding"] = make([]byte, MaxSecretBytes)
	unlabelled := tokenSecret(good)
	delete(unlabelled.Labels, IsManagedServiceAccountLabel)
	otherOwner := tokenSecret(good)
	otherOwner.OwnerReferences[0].UID = "another-uid"
	noToken := tokenSecret("")
	for name, c := range map[string]struct {
		secret  *corev1.Secret
		reason  string
		message string
	}{
		"none yet":                     {nil, ReasonTokenMissing, "no token Secret cluster1/argocd-pull yet"},
		"no token in it yet":           {noToken, ReasonTokenMissing, "holds no token yet"},
		"not managed-serviceaccount's": {unlabelled, ReasonTokenNotIssued, "not written by managed-serviceaccount"},
		"owned by another account":     {otherOwner, ReasonTokenNotIssued, "not written by managed-serviceaccount"},
		"huge":                         {huge, ReasonTokenRefused, "more than 65536"},
		"a huge token":                 {tokenSecret(strings.Repeat("a", MaxTokenBytes+1)), ReasonTokenRefused, "more than 8192"},
		"not a JWT":                    {tokenSecret("not-a-jwt"), ReasonTokenRefused, "not a ServiceAccount token"},
		"a header injection":           {tokenSecret(good + "\r\nImpersonate-User: admin"), ReasonTokenRefused, "outside a JWT's"},
		"claims not JSON":              {tokenSecret("a." + base64.RawURLEncoding.EncodeToString([]byte("{")) + ".c"), ReasonTokenRefused, "its claims"},
		"another account's":            {tokenSecret(jwt(t, map[string]any{"sub": "system:serviceaccount:kube-system:admin", "exp": now.Add(time.Hour).Unix()})), ReasonTokenRefused, "not system:serviceaccount:open-cluster-management-agent-addon:argocd-pull's"},
		"never expires":                {tokenSecret(jwt(t, map[string]any{"sub": account.Username()})), ReasonTokenRefused, "no expiry"},
		"expired":                      {tokenSecret(jwt(t, map[string]any{"sub": account.Username(), "exp": now.Unix()})), ReasonTokenExpired, "expired at 2026-12-03T12:00:00Z"},
	} {
		tok, refusal := DecideToken(c.secret, account, now)
		if refusal.Reason != c.reason || !strings.Contains(refusal.Message, c.message) || tok.Value != "" {
			t.Errorf("%s: %+v, token %q; want %s (%q) and no token", name, refusal, tok.Value, c.reason, c.message)
		}
		if strings.Contains(refusal.Message, "signature") || strings.Contains(refusal.Message, "eyJ") {
			t.Errorf("%s: the message quotes the Secret's contents: %s", name, refusal.Message)
		}
	}
}
