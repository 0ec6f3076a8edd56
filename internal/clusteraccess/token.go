package clusteraccess

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Bounds of a token Secret: a ServiceAccount token is about 1 KiB, its Secret (token and the
// cluster's CA) a few.
const (
	MaxTokenBytes  = 8 << 10
	MaxSecretBytes = 64 << 10
)

// IsManagedServiceAccountLabel is the label managed-serviceaccount puts on the token Secrets it
// writes.
const IsManagedServiceAccountLabel = "authentication.open-cluster-management.io/is-managed-serviceaccount"

// Reasons a token is not used; each becomes a condition on the GitOpsCluster.
const (
	ReasonTokenMissing   = "TokenMissing"
	ReasonTokenRefused   = "TokenRefused"
	ReasonTokenExpired   = "TokenExpired"
	ReasonTokenNotIssued = "TokenNotIssued"
)

// Account is a ManagedServiceAccount as the hub sees it: its name and UID in the cluster's
// namespace, the namespace on the cluster where its ServiceAccount lives (the add-on's install
// namespace), and the GitOpsCluster ("<namespace>/<name>") argocd-pull made it for.
type Account struct {
	Cluster, Name           string
	UID                     types.UID
	ServiceAccountNamespace string
	Owner                   string
}

// Username is the cluster's name for the account's ServiceAccount.
func (a Account) Username() string {
	return "system:serviceaccount:" + a.ServiceAccountNamespace + ":" + a.Name
}

// Token is a token that may go into the cluster's Argo CD secret.
type Token struct {
	Value   string
	Expires time.Time
}

// Refusal says why a token is not used; the zero value uses it.
type Refusal struct {
	Reason, Message string
}

// Refused reports whether the token is refused.
func (r Refusal) Refused() bool { return r.Reason != "" }

// DecideToken checks the token Secret of account (nil when there is none) at time now. It is used
// only when managed-serviceaccount wrote it for this account (its label, owned by the account's
// UID), it is within the bounds, and the token is a ServiceAccount token of the account's
// ServiceAccount that has not expired. The Secret's contents are never in the message.
func DecideToken(s *corev1.Secret, account Account, now time.Time) (Token, Refusal) {
	name := account.Cluster + "/" + account.Name
	if s == nil {
		return Token{}, Refusal{ReasonTokenMissing, fmt.Sprintf("no token Secret %s yet: managed-serviceaccount's agent on %s writes it (is the add-on available there?)", name, account.Cluster)}
	}
	if s.Labels[IsManagedServiceAccountLabel] != "true" || !ownedBy(s, account.UID) {
		return Token{}, Refusal{ReasonTokenNotIssued, fmt.Sprintf("the Secret %s was not written by managed-serviceaccount for the ManagedServiceAccount %s (its label and owner): not used", name, name)}
	}
	size := 0
	for k, v := range s.Data {
		size += len(k) + len(v)
	}
	if size > MaxSecretBytes {
		return Token{}, Refusal{ReasonTokenRefused, fmt.Sprintf("the token Secret %s holds %d bytes, more than %d: not used", name, size, MaxSecretBytes)}
	}
	raw := s.Data[corev1.ServiceAccountTokenKey]
	if len(raw) == 0 {
		return Token{}, Refusal{ReasonTokenMissing, fmt.Sprintf("the token Secret %s holds no token yet", name)}
	}
	if len(raw) > MaxTokenBytes {
		return Token{}, Refusal{ReasonTokenRefused, fmt.Sprintf("the token in %s is %d bytes, more than %d: not used", name, len(raw), MaxTokenBytes)}
	}
	claims, err := parseJWT(string(raw))
	if err != nil {
		return Token{}, Refusal{ReasonTokenRefused, fmt.Sprintf("the token in %s is not a ServiceAccount token: %v", name, err)}
	}
	if claims.Subject != account.Username() {
		return Token{}, Refusal{ReasonTokenRefused, fmt.Sprintf("the token in %s is not %s's: not used", name, account.Username())}
	}
	if claims.Expiry == 0 {
		return Token{}, Refusal{ReasonTokenRefused, fmt.Sprintf("the token in %s has no expiry: managed-serviceaccount's tokens expire and are rotated", name)}
	}
	expires := time.Unix(claims.Expiry, 0)
	if !now.Before(expires) {
		return Token{}, Refusal{ReasonTokenExpired, fmt.Sprintf("the token in %s expired at %s: managed-serviceaccount's agent on %s renews it (is the add-on available there?)", name, expires.UTC().Format(time.RFC3339), account.Cluster)}
	}
	return Token{Value: string(raw), Expires: expires}, Refusal{}
}

func ownedBy(s *corev1.Secret, uid types.UID) bool {
	if uid == "" {
		return false
	}
	for _, o := range s.OwnerReferences {
		if o.UID == uid && o.Kind == "ManagedServiceAccount" {
			return true
		}
	}
	return false
}

// jwtClaims are the claims of a ServiceAccount token that decide its use.
type jwtClaims struct {
	Subject string `json:"sub"`
	Expiry  int64  `json:"exp"`
}

// parseJWT reads the claims of a compact JWS without checking its signature (the cluster checks
// it; the hub only refuses what is not one account's token). The token's characters are the
// base64url alphabet and two dots, so it can go into a header unchanged.
func parseJWT(token string) (jwtClaims, error) {
	for _, r := range token {
		if (r < 'A' || r > 'Z') && (r < 'a' || r > 'z') && (r < '0' || r > '9') && r != '-' && r != '_' && r != '.' {
			return jwtClaims{}, fmt.Errorf("a character %q outside a JWT's", r)
		}
	}
	parts := strings.Split(token, ".")
	if len(parts) != 3 || parts[0] == "" || parts[1] == "" || parts[2] == "" {
		return jwtClaims{}, fmt.Errorf("%d parts, not a JWT's three", len(parts))
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return jwtClaims{}, fmt.Errorf("its claims: %w", err)
	}
	var c jwtClaims
	if err := json.Unmarshal(payload, &c); err != nil {
		return jwtClaims{}, fmt.Errorf("its claims: %w", err)
	}
	return c, nil
}
