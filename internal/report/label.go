package report

import (
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// HostingLabelValue is the value of the report's hosting-applicationset label:
// "<namespace>.<name>", cut to a valid label value of at most 63 characters.
func HostingLabelValue(namespace, name string) string {
	v := namespace + "." + name
	if len(v) > validation.LabelValueMaxLength {
		v = v[:validation.LabelValueMaxLength]
	}
	return strings.TrimRight(v, "-._")
}
