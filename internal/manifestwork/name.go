package manifestwork

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// hashLength is the hex digits of hash in a work name: 64 bits. With 8 (32 bits) a tenant found
// a name whose work name equals another tenant's in 24 minutes on 2 cores; 64 bits takes 2^32
// times as long.
const hashLength = 16

// WorkName is the name of the ManifestWork of the hub Application namespace/name: the app name
// and a short hash of namespace/name, so that same-named Applications of two hub namespaces never
// share a work, and the name is stable across restarts and re-creation. It is always a valid DNS
// subdomain of at most 253 characters.
func WorkName(namespace, name string) string {
	sum := sha256.Sum256([]byte(namespace + "/" + name))
	suffix := hex.EncodeToString(sum[:])[:hashLength]
	prefix := name
	if max := validation.DNS1123SubdomainMaxLength - hashLength - 1; len(prefix) > max {
		prefix = prefix[:max]
	}
	prefix = strings.TrimRight(prefix, "-.")
	if prefix == "" {
		return suffix
	}
	return prefix + "-" + suffix
}
