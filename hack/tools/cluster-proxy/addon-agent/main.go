// Command addon-agent runs cluster-proxy's addon-agent for one cluster, as upstream's
// cmd/addon-agent does by default: it renews the add-on's lease on the cluster, in the add-on's
// install namespace ($POD_NAMESPACE), by which the cluster's OCM registration agent calls
// cluster-proxy Available there. Left out: the checker of the certificate files a pod mounts
// (/etc/tls), the health server bound to :8888 of every interface (one host cannot give that port
// to two agents), and the port-forward proxy (off by default upstream). The konnectivity agent and
// the service proxy, which carry the traffic, run beside it (internal/sandbox/clusterproxy.go).
package main

import (
	"flag"
	"fmt"
	"os"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	"open-cluster-management.io/addon-framework/pkg/lease"
	ctrl "sigs.k8s.io/controller-runtime"
)

// addonName is cluster-proxy's add-on name (upstream's common.AddonName).
const addonName = "cluster-proxy"

func main() {
	klog.InitFlags(flag.CommandLine)
	flag.Parse()
	// controller-runtime registers --kubeconfig, as upstream's agent reads it: the managed
	// cluster's.
	kubeconfig := flag.Lookup("kubeconfig").Value.String()
	namespace := os.Getenv("POD_NAMESPACE")
	if kubeconfig == "" || namespace == "" {
		fmt.Fprintln(os.Stderr, "addon-agent: --kubeconfig and $POD_NAMESPACE are required")
		os.Exit(2)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		klog.Fatalf("the managed cluster's kubeconfig: %v", err)
	}
	spoke, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		klog.Fatalf("a client of the managed cluster: %v", err)
	}
	ctx := ctrl.SetupSignalHandler()
	klog.Infof("Starting lease updater")
	lease.NewLeaseUpdater(spoke, addonName, namespace).Start(ctx)
	<-ctx.Done()
}
