// Command registration-agent runs only the OCM registration agent of a managed cluster (upstream
// `registration agent`): it joins the hub with a bootstrap kubeconfig, obtains the cluster's own
// client certificate through a CertificateSigningRequest, keeps the cluster's lease and status on
// the hub, and writes the hub kubeconfig the work agent uses.
package main

import (
	"open-cluster-management.io/ocm/pkg/cmd/spoke"

	"github.com/argocd-pull/argocd-pull/hack/tools/ocm/internal/command"
)

func main() { command.Run(spoke.NewRegistrationAgent(), "registration-agent", "agent") }
