// Command agent runs managed-serviceaccount's agent for one cluster, built from its packages: the
// token controller (a ServiceAccount on the cluster for each ManagedServiceAccount in the cluster's
// namespace on the hub, its token requested there and synced into a Secret beside it on the hub)
// and the add-on's lease. `managed-serviceaccount agent` runs the same two, and also a health
// server bound to :8000 of every interface, which a pod gives each agent but one host cannot give
// two: the lab runs one agent per cluster, as processes, so this command leaves that server out.
// It takes the upstream agent's flags.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	authv1beta1 "open-cluster-management.io/managed-serviceaccount/apis/authentication/v1beta1"
	"open-cluster-management.io/managed-serviceaccount/pkg/addon/agent/controller"
	"open-cluster-management.io/managed-serviceaccount/pkg/addon/agent/health"
	"open-cluster-management.io/managed-serviceaccount/pkg/common"
)

func main() {
	spokeKubeconfig := flag.String("spoke-kubeconfig", "", "the managed cluster's kubeconfig")
	clusterName := flag.String("cluster-name", "", "the managed cluster's name")
	leaseHealthCheck := flag.Bool("lease-health-check", true, "renew the add-on's lease, which says the agent is available")
	klog.InitFlags(flag.CommandLine)
	flag.Parse()
	// controller-runtime registers --kubeconfig: the hub kubeconfig the add-on's registration
	// issued to this cluster's agent, as upstream.
	hubKubeconfig := flag.Lookup("kubeconfig").Value.String()
	namespace := os.Getenv("NAMESPACE") // the add-on's install namespace on the cluster, as upstream
	if hubKubeconfig == "" || *spokeKubeconfig == "" || *clusterName == "" || namespace == "" {
		fmt.Fprintln(os.Stderr, "agent: --kubeconfig, --spoke-kubeconfig, --cluster-name and $NAMESPACE are required")
		os.Exit(2)
	}
	if err := run(ctrl.SetupSignalHandler(), hubKubeconfig, *spokeKubeconfig, *clusterName, namespace, *leaseHealthCheck); err != nil {
		klog.Fatal(err)
	}
}

func run(ctx context.Context, hubKubeconfig, spokeKubeconfig, clusterName, namespace string, lease bool) error {
	ctrl.SetLogger(klog.Background())
	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(authv1beta1.AddToScheme(scheme))
	hubCfg, err := clientcmd.BuildConfigFromFlags("", hubKubeconfig)
	if err != nil {
		return fmt.Errorf("the hub kubeconfig: %w", err)
	}
	spokeCfg, err := clientcmd.BuildConfigFromFlags("", spokeKubeconfig)
	if err != nil {
		return fmt.Errorf("the managed cluster's kubeconfig: %w", err)
	}
	// As upstream: the hub's objects of this cluster's namespace only, and on the cluster the
	// ServiceAccounts the add-on made.
	mgr, err := ctrl.NewManager(hubCfg, ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Cache:                  cache.Options{DefaultNamespaces: map[string]cache.Config{clusterName: {}}},
	})
	if err != nil {
		return err
	}
	spokeCache, err := cache.New(spokeCfg, cache.Options{ByObject: map[client.Object]cache.ByObject{
		&corev1.ServiceAccount{}: {Namespaces: map[string]cache.Config{namespace: {
			LabelSelector: labels.SelectorFromSet(labels.Set{common.LabelKeyIsManagedServiceAccount: "true"}),
		}}},
	}})
	if err != nil {
		return err
	}
	if err := mgr.Add(spokeCache); err != nil {
		return err
	}
	hubClient, err := kubernetes.NewForConfig(hubCfg)
	if err != nil {
		return err
	}
	spokeClient, err := kubernetes.NewForConfig(spokeCfg)
	if err != nil {
		return err
	}
	if err := (&controller.TokenReconciler{
		Cache: mgr.GetCache(), HubClient: mgr.GetClient(), HubNativeClient: hubClient,
		SpokeNamespace: namespace, SpokeClientConfig: spokeCfg, SpokeNativeClient: spokeClient,
		ClusterName: clusterName, SpokeCache: spokeCache,
	}).SetupWithManager(mgr); err != nil {
		return err
	}
	if lease {
		updater, err := health.NewAddonHealthUpdater(hubCfg, clusterName, spokeCfg, namespace)
		if err != nil {
			return err
		}
		go updater.Start(ctx)
	}
	return mgr.Start(ctx)
}
