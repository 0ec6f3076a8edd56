package sandbox_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/argocd-pull/argocd-pull/internal/sandbox"
)

// What `make demo` shows a newcomer (argocd-pull sandbox up, its default --views): OCM's channel
// on, and beside the documents' ApplicationSet the same in the hardened form, whose Application
// the command's last lines name. In the hub's Argo CD UI a click on the node of that Application's
// Deployment (the lab's guestbook-ui, whose Pod runs on cluster1's node) in its tree opens the
// resource panel with cluster1's live manifest (its uid, read through the channel); DIFF and
// EVENTS open without an error, and LOGS shows the Pod's own lines from cluster1's kubelet. The
// argocd CLI's get-resource answers with the same object. The lab is left as it was.
func TestTheDemosHardenedApplicationShowsTheClustersOwnResources(t *testing.T) {
	requireLab(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	t.Cleanup(func() { _ = lab.RemoveViews(context.Background()) })
	if err := lab.ShowViews(ctx, 3*time.Minute); err != nil {
		t.Fatalf("turning the views on: %v", err)
	}
	cli := loginArgoCD(t)
	app := sandbox.ArgoNamespace + "/" + sandbox.HardenedApplication("cluster1")
	var uid string
	eventually(t, "argocd app get-resource answering with cluster1's Deployment", 5*time.Minute, "hub-argocd-pull.log", func() (bool, error) {
		out, err := cli.run(time.Minute, "app", "get-resource", app, "--kind", "Deployment", "--resource-name", "guestbook-ui", "-o", "yaml")
		uid = uidIn(out)
		return err == nil && uid != "" && strings.Contains(out, "namespace: "+sandbox.HardenedNamespace), fmt.Errorf("%v: %s", err, out)
	})

	ui := openArgoUI(t)
	ui.visit("the hardened Application", "/applications/"+app)
	// The Deployment's node in the tree (its kind label "deploy"; the ConfigMap beside it has the
	// same name), as a person clicks it.
	ui.waitFor("clicking the Deployment's node in the tree", time.Minute, `(() => {
		const node = [...document.querySelectorAll('.application-resource-tree__node')].find(n =>
			n.querySelector('.application-resource-tree__node-title')?.innerText.trim() === 'guestbook-ui' &&
			n.querySelector('.application-resource-tree__node-kind')?.innerText.trim() === 'deploy');
		if (!node) return false;
		node.click();
		return true;
	})()`)
	ui.waitText("the Deployment's panel with cluster1's live manifest", ".sliding-panel__body", time.Minute, "guestbook-ui", uid)
	for _, tab := range []string{"DIFF", "EVENTS"} {
		ui.click(tab, ".sliding-panel__body *", tab)
		ui.waitFor(tab+" open", 30*time.Second, `!!document.querySelector('.sliding-panel__body')`)
		time.Sleep(2 * time.Second) // its requests answered, or their error toasts raised
		ui.shot("hardened-" + strings.ToLower(tab))
	}
	ui.click("LOGS", ".sliding-panel__body *", "LOGS")
	ui.waitText("the Pod's own lines from cluster1", ".sliding-panel__body", 2*time.Minute, "the lab's stand-in for registry.invalid/guestbook-ui:1")
	ui.shot("hardened-logs")
	ui.noErrorToasts()
}
