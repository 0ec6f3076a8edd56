package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/argocd-pull/argocd-pull/api"
	"github.com/argocd-pull/argocd-pull/internal/argocd"
)

type pauseFlags struct {
	kubeconfig string
	namespace  string
	all        bool
	reason     string
}

// pauseTargets are the kinds pause and resume take, by the names kubectl users type.
var pauseTargets = map[string]schema.GroupVersionResource{
	"application":     argocd.ApplicationGVK.GroupVersion().WithResource("applications"),
	"applications":    argocd.ApplicationGVK.GroupVersion().WithResource("applications"),
	"app":             argocd.ApplicationGVK.GroupVersion().WithResource("applications"),
	"applicationset":  argocd.ApplicationSetGVK.GroupVersion().WithResource("applicationsets"),
	"applicationsets": argocd.ApplicationSetGVK.GroupVersion().WithResource("applicationsets"),
	"appset":          argocd.ApplicationSetGVK.GroupVersion().WithResource("applicationsets"),
}

func newPauseCommand() *cobra.Command { return pauseCommand(true) }

func newResumeCommand() *cobra.Command { return pauseCommand(false) }

func pauseCommand(pause bool) *cobra.Command {
	var f pauseFlags
	verb, Verb := "resume", "Resume"
	if pause {
		verb, Verb = "pause", "Pause"
	}
	cmd := &cobra.Command{
		Use:   verb + " (application|applicationset NAME | --all)",
		Short: Verb + " the delivery of a pull-model Application, an ApplicationSet, or of everything",
		Long: Verb + ` the delivery of one hub Application, of every Application of an ApplicationSet, or
(--all) of the whole controller. Nothing is deleted: while paused, argocd-pull writes no
ManifestWork for what is paused except once, to switch its works to OCM's ReadOnly update
strategy; the managed clusters keep what they run, their work agents keep reporting, and the
hub Applications and reports say "paused". Resuming delivers what changed meanwhile. Deleting a
paused hub Application leaves its Application on the managed cluster.

pause sets the annotation ` + api.PausedAnnotation + ` (to --reason) on the
Application or ApplicationSet, or the key "` + api.PauseKey + `" of the ConfigMap ` + api.PauseConfigMap + ` in the
Argo CD namespace (--all; -n names it); resume sets them to "false". A wider scope always wins: an
Application resumed while its ApplicationSet or the controller is paused stays paused.`,
		Example: fmt.Sprintf(`  # One Application during an incident
  argocd-pull %[1]s application guestbook-cluster1 -n openshift-gitops%[2]s

  # Every Application of an ApplicationSet
  argocd-pull %[1]s applicationset guestbook-allclusters-app-set -n openshift-gitops

  # Everything the controller delivers (the ConfigMap lives in the Argo CD namespace)
  argocd-pull %[1]s --all -n openshift-gitops`, verb, map[bool]string{true: ` --reason "INC-4711"`, false: ""}[pause]),
		Args: func(cmd *cobra.Command, args []string) error {
			switch {
			case f.all && len(args) > 0:
				return fmt.Errorf("--all takes no application or applicationset name (got %q)", args)
			case !f.all && len(args) != 2:
				return fmt.Errorf("want application NAME, applicationset NAME or --all")
			case !f.all:
				if _, ok := pauseTargets[args[0]]; !ok {
					return fmt.Errorf("unknown kind %q: want application (app) or applicationset (appset)", args[0])
				}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			value := "false"
			if pause {
				value = f.reason
			}
			return runPause(cmd.Context(), cmd.OutOrStdout(), f, args, value, verb+"d")
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&f.kubeconfig, "kubeconfig", "", "Path to the hub kubeconfig (default: $KUBECONFIG, ~/.kube/config, in-cluster config)")
	fs.StringVarP(&f.namespace, "namespace", "n", "", "Namespace of the Application or ApplicationSet, or with --all the Argo CD namespace (default: the kubeconfig context's namespace, else "+api.DefaultArgoCDNamespace+")")
	fs.BoolVar(&f.all, "all", false, verb+" everything the controller delivers")
	if pause {
		fs.StringVar(&f.reason, "reason", "true", "Why: shown on the hub Applications, in the reports and by status")
	}
	return cmd
}

func runPause(ctx context.Context, out io.Writer, f pauseFlags, args []string, value, done string) error {
	if value == "" {
		return fmt.Errorf("--reason must not be empty")
	}
	dc, ns, err := hubDynamicClient(f.kubeconfig, f.namespace)
	if err != nil {
		return err
	}
	if f.all {
		return pauseController(ctx, out, dc, ns, value, done)
	}
	gvr := pauseTargets[args[0]]
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{api.PausedAnnotation: value}}})
	if _, err := dc.Resource(gvr).Namespace(ns).Patch(ctx, args[1], types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		if apierrors.IsNotFound(err) {
			return fmt.Errorf("%s %s/%s not found: %w", gvr.Resource, ns, args[1], err)
		}
		return fmt.Errorf("annotating %s %s/%s: %w", gvr.Resource, ns, args[1], err)
	}
	fmt.Fprintf(out, "%s.%s/%s %s%s\n", gvr.Resource, gvr.Group, args[1], done, reasonSuffix(value))
	return nil
}

// pauseController sets the pause ConfigMap's key, creating the ConfigMap when missing.
func pauseController(ctx context.Context, out io.Writer, dc dynamic.Interface, ns, value, done string) error {
	cms := dc.Resource(corev1.SchemeGroupVersion.WithResource("configmaps")).Namespace(ns)
	patch, _ := json.Marshal(map[string]any{"data": map[string]string{api.PauseKey: value}})
	_, err := cms.Patch(ctx, api.PauseConfigMap, types.MergePatchType, patch, metav1.PatchOptions{})
	if apierrors.IsNotFound(err) {
		obj, _ := json.Marshal(map[string]any{
			"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": api.PauseConfigMap, "namespace": ns},
			"data":     map[string]string{api.PauseKey: value},
		})
		_, err = cms.Patch(ctx, api.PauseConfigMap, types.ApplyPatchType, obj, metav1.PatchOptions{FieldManager: "argocd-pull"})
	}
	if err != nil {
		return fmt.Errorf("setting ConfigMap %s/%s: %w", ns, api.PauseConfigMap, err)
	}
	fmt.Fprintf(out, "configmap/%s %s%s: every Application of the controller whose Argo CD namespace is %s\n", api.PauseConfigMap, done, reasonSuffix(value), ns)
	return nil
}

func reasonSuffix(value string) string {
	if value == "true" || value == "false" {
		return ""
	}
	return " (" + value + ")"
}
