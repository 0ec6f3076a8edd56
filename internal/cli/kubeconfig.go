package cli

import (
	"errors"
	"fmt"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// loadKubeconfig loads the kubeconfig at path, or when path is empty the usual chain ($KUBECONFIG,
// ~/.kube/config, then the in-cluster config), and returns the namespace its current context names
// ("" when it names none).
func loadKubeconfig(path string) (*rest.Config, string, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = path
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{})
	cfg, err := cc.ClientConfig()
	if err != nil {
		if path != "" {
			return nil, "", fmt.Errorf("loading kubeconfig %s: %w", path, err)
		}
		if clientcmd.IsEmptyConfig(err) {
			return nil, "", noConfiguration()
		}
		return nil, "", fmt.Errorf("loading kubeconfig: %w", err)
	}
	// Namespace() says "default" when the context has none; only an explicit one is returned.
	raw, err := cc.RawConfig()
	if err != nil {
		return cfg, "", nil // the in-cluster config has no contexts
	}
	if c := raw.Contexts[raw.CurrentContext]; c != nil {
		return cfg, c.Namespace, nil
	}
	return cfg, "", nil
}

// restConfig loads the kubeconfig at path, or the usual chain when path is empty.
func restConfig(path string) (*rest.Config, error) {
	cfg, _, err := loadKubeconfig(path)
	return cfg, err
}

// noConfiguration says why neither a kubeconfig nor the in-cluster configuration was found. The
// loading chain only says "no configuration has been provided" when a pod lacks its token.
func noConfiguration() error {
	_, err := rest.InClusterConfig()
	if err == nil {
		err = errors.New("it loads now: try again")
	}
	return fmt.Errorf("no Kubernetes configuration: no --kubeconfig, $KUBECONFIG or ~/.kube/config, "+
		"and no in-cluster configuration (%w); in a pod, check that the service-account token is mounted (automountServiceAccountToken)", err)
}
