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
// ConfigMap (the lab's guestbook) in its tree opens the resource panel with cluster1's live
// manifest (its uid, read through the channel), and DIFF and EVENTS open without an error; the
// argocd CLI's get-resource answers with the same object. (LOGS need a Pod, which the lab's
// guestbook has none of: TestAnApplicationOnItsClustersChannelShowsTheClustersOwnTree opens them.)
// The lab is left as it was.
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
	eventually(t, "argocd app get-resource answering with cluster1's ConfigMap", 5*time.Minute, "hub-argocd-pull.log", func() (bool, error) {
		out, err := cli.run(time.Minute, "app", "get-resource", app, "--kind", "ConfigMap", "--resource-name", "guestbook-ui", "-o", "yaml")
		uid = uidIn(out)
		return err == nil && uid != "" && strings.Contains(out, "namespace: "+sandbox.HardenedNamespace), fmt.Errorf("%v: %s", err, out)
	})

	ui := openArgoUI(t)
	ui.visit("the hardened Application", "/applications/"+app)
	// The ConfigMap's node in the tree, as a person clicks it.
	ui.waitFor("clicking the ConfigMap's node in the tree", time.Minute, `(() => {
		const node = [...document.querySelectorAll('.application-resource-tree__node')].find(n =>
			n.querySelector('.application-resource-tree__node-title')?.innerText.trim() === 'guestbook-ui');
		if (!node) return false;
		node.click();
		return true;
	})()`)
	ui.waitText("the ConfigMap's panel with cluster1's live manifest", ".sliding-panel__body", time.Minute, "guestbook-ui", uid)
	for _, tab := range []string{"DIFF", "EVENTS"} {
		ui.click(tab, ".sliding-panel__body *", tab)
		ui.waitFor(tab+" open", 30*time.Second, `!!document.querySelector('.sliding-panel__body')`)
		time.Sleep(2 * time.Second) // its requests answered, or their error toasts raised
		ui.shot("hardened-" + strings.ToLower(tab))
	}
	ui.noErrorToasts()
}
