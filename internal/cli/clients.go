// What every command shares: the kubeconfig, the hub's clients, and the terminal it writes to.

package cli

import (
	"errors"
	"fmt"
	"io"
	"os"

	"golang.org/x/term"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/argocd-pull/argocd-pull/api"
	"github.com/argocd-pull/argocd-pull/internal/reportview"
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

// hubConfig loads the kubeconfig and picks the namespace: the flag, else the current context's,
// else the Argo CD namespace the controller defaults to.
func hubConfig(kubeconfig, namespace string) (*rest.Config, string, error) {
	cfg, contextNamespace, err := loadKubeconfig(kubeconfig)
	if err != nil {
		return nil, "", err
	}
	switch {
	case namespace != "":
		return cfg, namespace, nil
	case contextNamespace != "":
		return cfg, contextNamespace, nil
	}
	return cfg, api.DefaultArgoCDNamespace, nil
}

// hubDynamicClient is a dynamic client of the hub and the namespace (see hubConfig).
func hubDynamicClient(kubeconfig, namespace string) (dynamic.Interface, string, error) {
	cfg, ns, err := hubConfig(kubeconfig, namespace)
	if err != nil {
		return nil, "", err
	}
	dc, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, "", fmt.Errorf("creating client: %w", err)
	}
	return dc, ns, nil
}

// isTerminal reports whether w is a character device, as a terminal is. No module dependency
// for this: /dev/null passes too, where colours do no harm.
// outputWidth is the terminal's width, or, when the output is not a terminal (a pipe, a file, a
// test), wide enough that nothing is cut, as kubectl prints.
func outputWidth(w io.Writer, tty bool) int {
	if !tty {
		return noWidthLimit
	}
	if f, ok := w.(*os.File); ok {
		if width, _, err := term.GetSize(int(f.Fd())); err == nil && width > 0 {
			return width
		}
	}
	return reportview.DefaultWidth
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
