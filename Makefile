# argocd-pull. `make help` lists the targets.

SHELL := /usr/bin/env bash -o pipefail
.SHELLFLAGS := -ec
.DEFAULT_GOAL := help

BIN := $(CURDIR)/bin
# The tools below are built once per machine, not once per checkout: each bin/<tool> is a link to
# TOOLS_CACHE/<tool> (by default under the user's data directory, as setup-envtest keeps its
# binaries), so a second clone finds them built (hack/tools/cache.sh; a checkout whose bin/ holds
# them already hands them over). TOOLS_CACHE= keeps them in bin/ alone.
TOOLS_CACHE ?= $(or $(XDG_DATA_HOME),$(HOME)/.local/share)/argocd-pull/tools
TOOL_DIRS := k8s ocm cluster-proxy managed-serviceaccount argocd helm go-tools
ifneq ($(TOOLS_CACHE),)
$(shell hack/tools/cache.sh '$(TOOLS_CACHE)' '$(BIN)' $(TOOL_DIRS) >&2)
ifneq ($(.SHELLSTATUS),0)
$(error hack/tools/cache.sh could not link bin/ to the tool cache $(TOOLS_CACHE): set TOOLS_CACHE= to build the tools into bin/)
endif
endif
# The apiserver and etcd version is the one hack/tools/kube pins; tests find the binaries here.
KUBE_VERSION := $(shell sed -n 's/^\tk8s.io\/kubernetes v//p' hack/tools/kube/go.mod)
KUBE_ASSETS := $(BIN)/k8s/$(KUBE_VERSION)

# The OCM work agent (end-to-end tests, sandbox) is built by hack/tools/ocm at the version it pins.
OCM_VERSION := $(shell sed -n 's/^\topen-cluster-management.io\/ocm v//p' hack/tools/ocm/go.mod)
OCM_ASSETS := $(BIN)/ocm/v$(OCM_VERSION)

# OCM's add-ons that give the hub a read-only way to each cluster, built at the versions their tools
# modules pin: cluster-proxy with the konnectivity server and agent (hack/tools/cluster-proxy), and
# managed-serviceaccount (hack/tools/managed-serviceaccount).
CLUSTER_PROXY_VERSION := $(shell sed -n 's/^\topen-cluster-management.io\/cluster-proxy \(v[^ ]*\).*/\1/p' hack/tools/cluster-proxy/go.mod)
CLUSTER_PROXY_ASSETS := $(BIN)/cluster-proxy/$(CLUSTER_PROXY_VERSION)
MSA_VERSION := $(shell sed -n 's/^\topen-cluster-management.io\/managed-serviceaccount \(v[^ ]*\).*/\1/p' hack/tools/managed-serviceaccount/go.mod)
MSA_ASSETS := $(BIN)/managed-serviceaccount/$(MSA_VERSION)

# Argo CD: hack/tools/argocd/VERSION pins the release the lab and the tests run and install the
# CRDs of. ARGOCD_VERSION=v3.4.7 runs another on the hub (and, unless MANAGED_ARGOCD_VERSION says
# otherwise, on the managed clusters); hack/tools/argocd/build.sh builds any release. Argo CD 3.4+
# needs sources no module zip holds (its gitops-engine directory): build.sh takes them from GitHub,
# else from ARGOCD_VENDOR (by default a shared/vendor directory beside this checkout, if any).
ARGOCD_VERSION ?= $(shell cat hack/tools/argocd/VERSION)
MANAGED_ARGOCD_VERSION ?= $(ARGOCD_VERSION)
ARGOCD_ASSETS := $(BIN)/argocd/$(ARGOCD_VERSION)
MANAGED_ARGOCD_ASSETS := $(BIN)/argocd/$(MANAGED_ARGOCD_VERSION)
ARGOCD_VENDOR ?= $(abspath $(wildcard $(CURDIR)/../shared/vendor))
export ARGOCD_VERSION MANAGED_ARGOCD_VERSION ARGOCD_VENDOR

# kubectl (kustomize, server-side apply) comes from hack/tools/kube at the apiserver's version;
# helm from hack/tools/helm at the version it pins. The install test uses both.
KUBECTL := $(KUBE_ASSETS)/kubectl
HELM_VERSION := $(shell sed -n 's/^\thelm.sh\/helm\/v3 v\([^ ]*\).*/\1/p' hack/tools/helm/go.mod)
HELM_ASSETS := $(BIN)/helm/v$(HELM_VERSION)
HELM := $(HELM_ASSETS)/helm
CHART := charts/argocd-pull

CONTROLLER_GEN_VERSION := v0.21.0
CONTROLLER_GEN := $(BIN)/go-tools/controller-gen-$(CONTROLLER_GEN_VERSION)
GOLANGCI_LINT_VERSION := v2.6.2
GOLANGCI_LINT := $(BIN)/go-tools/golangci-lint-$(GOLANGCI_LINT_VERSION)
ACTIONLINT_VERSION := v1.7.12
ACTIONLINT := $(BIN)/go-tools/actionlint-$(ACTIONLINT_VERSION)

# The release this tree builds: the chart's appVersion, which the chart and kustomize also take as
# the image tag. Every build stamps it and the commit into the binary (argocd-pull version).
VERSION ?= $(shell sed -n 's/^appVersion: //p' $(CHART)/Chart.yaml)
REVISION ?= $(shell git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)$(shell git diff --quiet HEAD 2>/dev/null || echo -dirty)
LDFLAGS := -X github.com/argocd-pull/argocd-pull/internal/cli.version=$(VERSION) -X github.com/argocd-pull/argocd-pull/internal/cli.revision=$(REVISION)
# The controller image make image builds, and its platforms (cross-compiled: no emulation).
IMAGE ?= ghcr.io/argocd-pull/argocd-pull:$(VERSION)
PLATFORMS ?= linux/amd64 linux/arm64
# podman or docker (default: podman when installed); PUSH=1 pushes the image. DEMO_IMAGE=1 makes
# make demo run the lab's controller from the image.
DEMO_IMAGE ?=
CONTAINER_TOOL ?=
PUSH ?=
GO_TEST_FLAGS ?=

##@ General

.PHONY: help
help: ## Show this help
	@awk 'BEGIN {FS = ":.*##"; printf "Usage: make <target>\n"} /^[a-zA-Z0-9_-]+:.*?##/ { printf "  \033[36m%-14s\033[0m %s\n", $$1, $$2 } /^##@/ { printf "\n\033[1m%s\033[0m\n", substr($$0, 5) }' $(MAKEFILE_LIST)

##@ Development

.PHONY: demo
demo: build kube-assets node-assets ocm-assets addon-assets argocd-assets sandbox-deps $(if $(DEMO_IMAGE),demo-image) ## Start the local lab (hub + 2 managed clusters, real components); DEMO_IMAGE=1 runs its controller from the image; 'bin/argocd-pull sandbox down' stops it
	$(BIN)/argocd-pull sandbox up --clusters 2 --dir .sandbox $(if $(DEMO_IMAGE),--controller-image $(IMAGE))

.PHONY: demo-image
demo-image: container-deps ## Build the image for this machine's platform only: make test's image tests, and make demo DEMO_IMAGE=1 (make image builds every platform)
	$(MAKE) image PLATFORMS=linux/$$(go env GOARCH)

.PHONY: build
build: ## Build bin/argocd-pull, and bin/kubectl-argocd_pull: the same binary as a kubectl plugin ('kubectl argocd-pull status' with bin/ on PATH)
	go build -ldflags "$(LDFLAGS)" -o $(BIN)/argocd-pull ./cmd/argocd-pull
	ln -sf argocd-pull $(BIN)/kubectl-argocd_pull

.PHONY: image
image: ## Build the controller image IMAGE (default ghcr.io/argocd-pull/argocd-pull:<VERSION>) for PLATFORMS with podman, or docker buildx; PUSH=1 pushes it
	IMAGE=$(IMAGE) PLATFORMS="$(PLATFORMS)" VERSION=$(VERSION) REVISION=$(REVISION) LDFLAGS="$(LDFLAGS)" \
		CONTAINER_TOOL=$(CONTAINER_TOOL) PUSH=$(PUSH) hack/image/build.sh

.PHONY: generate
generate: $(CONTROLLER_GEN) ## Generate deepcopy code, CRDs and RBAC from the API types and markers
	$(CONTROLLER_GEN) object paths=./api/...
	$(CONTROLLER_GEN) crd paths=./api/... output:crd:artifacts:config=config/crd/bases
	$(CONTROLLER_GEN) rbac:roleName=argocd-pull paths=./internal/controller/... output:rbac:artifacts:config=config/rbac
	$(MAKE) --no-print-directory chart

.PHONY: chart
chart: ## Copy the generated CRDs, the ClusterRole rules, the Argo CD namespace Role rules, the alerts and the dashboard from config/ into the Helm chart (part of generate)
	rm -f $(CHART)/crds/*.yaml
	cp config/crd/bases/*.yaml $(CHART)/crds/
	{ echo '{{/* Generated by make chart from config/rbac/role.yaml: do not edit. */}}'; \
	  echo '{{- define "argocd-pull.clusterRoleRules" }}'; \
	  awk '/^rules:/ {p = 1} p && /^---/ {exit} p' config/rbac/role.yaml; \
	  echo '{{- end }}'; } > $(CHART)/templates/_clusterrole_rules.tpl
	{ echo '{{/* Generated by make chart from config/argocd-namespace/role.yaml: do not edit. */}}'; \
	  echo '{{- define "argocd-pull.argocdNamespaceRules" }}'; \
	  awk '/^rules:/ {p = 1} p && /^---/ {exit} p' config/argocd-namespace/role.yaml; \
	  echo '{{- end }}'; } > $(CHART)/templates/_argocd_namespace_rules.tpl
	awk 'p {sub(/^  /, ""); print} /^spec:/ {p = 1}' config/monitoring/prometheusrule.yaml > $(CHART)/files/alerts.yaml
	cp config/monitoring/dashboard.json $(CHART)/files/dashboard.json

.PHONY: docs
docs: ## Write docs/cli.md from the commands, and the benchmark tables and figures in docs/ and the README from test/bench/results
	go run ./hack/gendocs

.PHONY: verify
verify: generate docs ## Check that generated files, the docs' generated parts (command reference, benchmark figures) and go.mod are up to date, that the tests install the pinned Argo CD's CRDs, and that no results file the README quotes is behind the code (make bench-age)
	go mod tidy
	ARGOCD_VERSION= MANAGED_ARGOCD_VERSION= go test -count=1 -run 'TestTheTestsInstallThePinnedArgoCDsCRDs' ./internal/assets
	@git diff --exit-code -- api config charts docs README.md test/bench/results go.mod go.sum || { echo "Generated files or go.mod are out of date: run 'make generate docs' and 'go mod tidy', then commit."; exit 1; }
	@go run ./hack/benchage

.PHONY: lint
lint: $(GOLANGCI_LINT) $(ACTIONLINT) ## Run gofmt, go vet, golangci-lint, and actionlint on the workflows
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	go vet ./...
	$(GOLANGCI_LINT) run ./...
	$(ACTIONLINT) .github/workflows/*.yaml

##@ Deployment

.PHONY: deploy
deploy: $(KUBECTL) ## Install argocd-pull into the cluster of the current kubeconfig (kustomize config/default, server-side apply)
	$(KUBECTL) apply --server-side -k config/default

.PHONY: helm-lint
helm-lint: $(HELM) ## Lint the Helm chart
	$(HELM) lint --strict $(CHART)

##@ Test

# -count=1: test/e2e and test/sandbox build the controller when they run, which Go's test cache
# does not see; a cached pass after a controller change would be a stale one.
# The packages that share the cache's objects (interned subtrees, readers that skip the deep copy)
# run under the race detector first; the rest after them. (internal/controller was out of this list
# under controller-runtime v0.24, whose priority queue could deadlock at shutdown:
# kubernetes-sigs/controller-runtime#3538, fixed in v0.25.) The lab's tests (test/sandbox, about
# 25 minutes on one lab, mostly waiting on its clusters: alone, it leaves about 64% of 2 cores
# idle) run from the start beside both steps, as two shards, each on a lab of its own: the tests of
# OCM's channel, the resource views and Argo CD's CLI and UI (LAB_VIEWS_TESTS, go test -run), and
# all the others (go test -skip of the same names), so that every test is in one shard and a new
# one is in the second unless it is named here. Each lab takes its ports from a range of its own
# (LAB_PORTS); the second runs without OCM's channel (LAB_CHANNEL=off): cluster-proxy's user server
# binds :8000 for its probes, so only one lab on a machine has the channel. The wall time is the
# slower shard's; their output follows the others'.
RACE_PACKAGES := ./internal/controller/... ./internal/report/... ./internal/appstatus/... ./internal/dashboard/... ./internal/intern/... ./internal/propagation/... ./internal/manifestwork/...
LAB_PACKAGES := ./test/sandbox
LAB_VIEWS_TESTS := ^(TestArgoCDCLIOnAPullModelApplication|TestArgoCDCLIOnTheDocumentsMultiSourceApplication|TestArgoCDCLITerminatesASyncStuckInAHook|TestTheHubServesArgoCDsWebUI|TestArgoCDsWebUIOnPullModelApplications|TestAClusterCannotAimItsClusterSecretAtTheHub|TestTheHubReadsAClusterThroughOCMsChannel|TestTheHubReachesAClusterThroughClusterProxy|TestTheDemosHardenedApplicationShowsTheClustersOwnResources|TestAManagedServiceAccountsTokenIsItsClusterAccount|TestResourceLevelVerbsOnTheHubsTreeReachNoHubObject|TestATenantCannotAimItsClustersViewsAtTheHubOrAnotherCluster|TestAnApplicationOnItsClustersChannelShowsTheClustersOwnTree|TestResourceLevelVerbsOnTheClustersOwnTreeReachOnlyTheClusterReadOnly|TestAChannelThatIsDownGivesTheDisplayTreeUntilItIsBack|TestATokenTheClusterRefusesGivesItsOwnErrorAndTheDisplayTree|TestATenantsProjectKeepsItFromTheClustersViews)$$
OTHER_PACKAGES = $(shell go list ./... | grep -vE '/internal/(controller|report|appstatus|dashboard|intern|propagation|manifestwork)(/|$$)|/test/sandbox$$')
# make test prints what a plain go test prints, then the wall time of each step, each package and
# the ten slowest tests (hack/testtime, from go test -json; the results stay in TEST_EVENTS).
TEST_EVENTS := tmp/test-events.json
LAB_TEST_OUTPUT := tmp/lab-test
TEST_ENV = KUBEBUILDER_ASSETS=$(KUBE_ASSETS) OCM_ASSETS=$(OCM_ASSETS) CLUSTER_PROXY_ASSETS=$(CLUSTER_PROXY_ASSETS) MSA_ASSETS=$(MSA_ASSETS) KUBECTL=$(KUBECTL) HELM=$(HELM) REQUIRE_CHROMIUM=1 \
	ARGOCD_PULL_IMAGE=$(IMAGE) REQUIRE_CONTAINER=1

.PHONY: test
test: kube-assets node-assets ocm-assets addon-assets argocd-assets install-tools sandbox-deps chromium container-deps demo-image ## Run all tests: unit, real-apiserver (the cache's sharers under -race), install manifests, the image, end-to-end, and the lab beside them
	@mkdir -p tmp && rm -f $(TEST_EVENTS) $(LAB_TEST_OUTPUT)-*.out && go build -o $(BIN)/testtime ./hack/testtime
	@status=0; \
	echo "go test -count=1 -timeout 45m $(GO_TEST_FLAGS) $(LAB_PACKAGES), two shards on a lab each: -run '<LAB_VIEWS_TESTS>' and -skip '<LAB_VIEWS_TESTS>' (beside the steps below; their output follows theirs)"; \
	( $(TEST_ENV) LAB_PORTS=32768-40959 go test -json -count=1 -timeout 45m $(GO_TEST_FLAGS) -run '$(LAB_VIEWS_TESTS)' $(LAB_PACKAGES) | $(BIN)/testtime -events $(TEST_EVENTS) -step "lab: views" > $(LAB_TEST_OUTPUT)-views.out 2>&1 ) & views=$$!; \
	( $(TEST_ENV) LAB_PORTS=40960-49151 LAB_CHANNEL=off go test -json -count=1 -timeout 45m $(GO_TEST_FLAGS) -skip '$(LAB_VIEWS_TESTS)' $(LAB_PACKAGES) | $(BIN)/testtime -events $(TEST_EVENTS) -step "lab: the rest" > $(LAB_TEST_OUTPUT)-rest.out 2>&1 ) & rest=$$!; \
	echo "go test -race -count=1 -timeout 20m $(GO_TEST_FLAGS) <the cache's sharers>"; \
	$(TEST_ENV) go test -json -race -count=1 -timeout 20m $(GO_TEST_FLAGS) $(RACE_PACKAGES) | $(BIN)/testtime -events $(TEST_EVENTS) -step race || status=$$?; \
	if [ $$status -eq 0 ]; then \
		echo "go test -count=1 -timeout 40m $(GO_TEST_FLAGS) <the others>"; \
		$(TEST_ENV) go test -json -count=1 -timeout 40m $(GO_TEST_FLAGS) $(OTHER_PACKAGES) | $(BIN)/testtime -events $(TEST_EVENTS) -step others || status=$$?; \
	fi; \
	echo "the lab ($(LAB_PACKAGES)), its views' shard:"; \
	wait $$views || status=$$?; cat $(LAB_TEST_OUTPUT)-views.out; \
	echo "the lab ($(LAB_PACKAGES)), the other tests' shard:"; \
	wait $$rest || status=$$?; cat $(LAB_TEST_OUTPUT)-rest.out; \
	$(BIN)/testtime -table $(TEST_EVENTS); exit $$status

# The lab's tests of Argo CD's own clients on a pull-model Application: the argocd CLI through the
# API server, the web UI it serves, the ApplicationSet controller's RollingSync, the documents'
# flow, and the status a managed cluster's Argo CD version reports (docs/compatibility.md).
ARGOCD_CLIENT_TESTS := TestArgoCDCLIOnAPullModelApplication|TestResourceLevelVerbsOnTheHubsTreeReachNoHubObject|TestArgoCDCLITerminatesASyncStuckInAHook|TestArgoCDCLIOnTheDocumentsMultiSourceApplication|TestTheHubServesArgoCDsWebUI|TestArgoCDsWebUIOnPullModelApplications|TestDocumentsFlowConverges|TestTheHubShowsWhatTheClusterReports|TestRefreshAndSyncFromTheHubReachTheClusterOnce|TestRollingSyncStepsThroughTheFleet

.PHONY: test-argocd
test-argocd: kube-assets node-assets ocm-assets addon-assets argocd-assets sandbox-deps chromium ## Run the lab's Argo CD client tests on ARGOCD_VERSION (hub) and MANAGED_ARGOCD_VERSION (managed clusters); the pull-request workflow runs them on each supported version
	$(TEST_ENV) go test -count=1 -timeout 30m -run '^($(ARGOCD_CLIENT_TESTS))$$' -v ./test/sandbox

.PHONY: test-unit
test-unit: ## Run the tests that need no apiserver
	go test -short $(GO_TEST_FLAGS) ./...

FUZZTIME ?= 30s

.PHONY: fuzz
fuzz: ## Run every fuzz target for FUZZTIME each (default 30s; a count such as 100000x works too); make test runs their seed corpora
	FUZZTIME=$(FUZZTIME) hack/fuzz/run.sh

# One target per run, each within one sitting on the development machine (docs/benchmarks.md says
# what each measures); each prints first how long its last run took, from its results file.
# bench_last file: that line. Two formats: the rollouts' "(N s)." and the fleet's ", N s in all".
bench_last = @t=$$({ sed -n -E -e 's/.*\(([0-9]+) s\)\.$$/\1/p' -e 's/.*, ([0-9,]+) s in all.*/\1/p' $(1) 2>/dev/null || true; } | head -1); \
	if [ -n "$$t" ]; then echo "The last run took $$t s ($(1))."; else echo "No earlier run: $(1) does not exist yet."; fi
# bench_last_limit file: the same for a limit run apart (", N s of the limit."), as the concurrent
# rollouts' file made before their target ran both in one sitting says.
bench_last_limit = @t=$$(sed -n -E 's/.*, ([0-9]+) s of the limit\.$$/\1/p' $(1) 2>/dev/null | head -1); \
	if [ -n "$$t" ]; then echo "The last limit run took $$t s ($(1))."; else echo "No earlier limit run apart in $(1)."; fi
BENCH_RUN = KUBEBUILDER_ASSETS=$(KUBE_ASSETS) OCM_ASSETS=$(OCM_ASSETS) go run ./test/bench --controller $(BIN)/argocd-pull
# The rollout scenarios but the concurrent one, which has its own run.
BENCH_ROLLOUTS = new-revision,second-commit,failing-revision,no-rollingsync

.PHONY: bench
bench: ## Run every benchmark, one run after another, in the order docs/benchmarks.md gives: bench-rollouts-concurrent (with its limit), bench-rollouts, bench-rollouts-default-templating, bench-fleet, bench-fleet-5000, bench-go, bench-credentials, then bench-cluster-tree; not part of make test
	$(MAKE) --no-print-directory bench-rollouts-concurrent
	$(MAKE) --no-print-directory bench-rollouts
	$(MAKE) --no-print-directory bench-rollouts-default-templating
	$(MAKE) --no-print-directory bench-fleet
	$(MAKE) --no-print-directory bench-fleet-5000
	$(MAKE) --no-print-directory bench-go
	$(MAKE) --no-print-directory bench-credentials
	$(MAKE) --no-print-directory bench-cluster-tree

# Ten RollingSync ApplicationSets of 1,000 clusters each, a new revision committed to all at once,
# with CPU profiles of the first 120 s; then, in the same sitting, the same without the pull model
# (the limit), so that the ratio divides two runs of one machine's state. About two hours: start it
# first, with nothing beside it.
.PHONY: bench-rollouts-concurrent
bench-rollouts-concurrent: kube-assets ocm-assets argocd-assets sandbox-deps build ## Run ten concurrent rollouts at 1,000 clusters, then their limit in the same sitting, into test/bench/results/rollouts-concurrent-1000, then make docs (about two hours); prints how long the last run took first
	$(call bench_last,test/bench/results/rollouts-concurrent-1000/results.md)
	$(call bench_last_limit,test/bench/results/rollouts-concurrent-1000/results.md)
	$(BENCH_RUN) --scenarios rollouts --clusters 1000 --rollout-scenarios concurrent --cpu-profile 120s --rollouts-out test/bench/results/rollouts-concurrent-1000 --logs tmp/bench-concurrent
	$(MAKE) --no-print-directory docs

# The rollouts at 100 and 1,000 clusters with their limits, one run per templating: goTemplate
# into rollouts/, the documents' default templating into rollouts-default-templating/.
.PHONY: bench-rollouts
bench-rollouts: kube-assets ocm-assets argocd-assets sandbox-deps build ## Run the rollout scenarios at 100 and 1,000 clusters with their limits (goTemplate) into test/bench/results/rollouts, then make docs; prints how long the last run took first
	$(call bench_last,test/bench/results/rollouts/results.md)
	$(BENCH_RUN) --scenarios rollouts --clusters 100,1000 --rollout-scenarios $(BENCH_ROLLOUTS) --rollouts-out test/bench/results/rollouts --logs tmp/bench-rollouts
	$(MAKE) --no-print-directory docs

.PHONY: bench-rollouts-default-templating
bench-rollouts-default-templating: kube-assets ocm-assets argocd-assets sandbox-deps build ## Run the rollout scenarios at 100 and 1,000 clusters with their limits in the documents' default templating into test/bench/results/rollouts-default-templating, then make docs; prints how long the last run took first
	$(call bench_last,test/bench/results/rollouts-default-templating/results.md)
	$(BENCH_RUN) --scenarios rollouts --clusters 100,1000 --rollout-scenarios $(BENCH_ROLLOUTS) --applicationset-templating default --rollouts-out test/bench/results/rollouts-default-templating --logs tmp/bench-rollouts-default
	$(MAKE) --no-print-directory docs

# The fleet at 100 and 1,000 clusters alone: the results file docs/benchmarks.md quotes for delivery,
# feedback, the steady state and the restart. It needs the apiserver and etcd, redis and the controller.
.PHONY: bench-fleet
bench-fleet: $(KUBE_ASSETS)/kube-apiserver $(KUBE_ASSETS)/etcd sandbox-deps build ## Run the fleet scenario at 100 and 1,000 clusters (A=10) into test/bench/results, then make docs; prints how long the last run took first
	$(call bench_last,test/bench/results/results.md)
	$(BENCH_RUN) --clusters 100,1000 --applicationsets 10 --scenarios fleet
	$(MAKE) --no-print-directory docs

# The fleet at 5,000 clusters, without the steady state: docs/install.md's sizing comes from it.
.PHONY: bench-fleet-5000
bench-fleet-5000: $(KUBE_ASSETS)/kube-apiserver $(KUBE_ASSETS)/etcd sandbox-deps build ## Run the fleet scenario at 5,000 clusters (A=10, no steady state) into test/bench/results/n5000, then make docs; prints how long the last run took first
	$(call bench_last,test/bench/results/n5000/results.md)
	$(BENCH_RUN) --clusters 5000 --applicationsets 10 --scenarios fleet --steady 0 --out test/bench/results/n5000 --logs tmp/bench5000
	$(MAKE) --no-print-directory docs

# Go's own benchmark output, with the command before each package's: make docs reads its figures.
BENCH_GO := test/bench/results/gobench.txt

# One Application on its cluster's channel in the lab (cluster-proxy, managed-serviceaccount, the
# hub's Argo CD): from a change of its tree on the cluster to the hub's API server showing it, and
# the reads through the channel per change. Its own lab: nothing else runs beside it.
BENCH_TREE := test/bench/results/cluster-tree.txt
BENCH_TREE_CHANGES ?= 40

.PHONY: bench-cluster-tree
bench-cluster-tree: kube-assets node-assets ocm-assets addon-assets argocd-assets install-tools sandbox-deps ## Run the lab's benchmark of an Application's own tree read through OCM's channel ($(BENCH_TREE_CHANGES) changes on its cluster: time to the hub's views, reads per change) into test/bench/results/cluster-tree.txt, then make docs; prints how long the last run took first
	@t=$$({ sed -n -E 's/^ok .*[[:space:]]([0-9.]+)s$$/\1/p' $(BENCH_TREE) 2>/dev/null || true; } | head -1); \
		if [ -n "$$t" ]; then echo "The last run took $$t s ($(BENCH_TREE))."; else echo "No earlier run: $(BENCH_TREE) does not exist yet."; fi
	@echo "# make bench-cluster-tree, revision $(REVISION):" > $(BENCH_TREE).new
	$(TEST_ENV) REQUIRE_CONTAINER= go test -count=1 -timeout 40m -run '^$$' -bench '^BenchmarkAClusterTreeChangeReachesTheHub$$' -benchtime=$(BENCH_TREE_CHANGES)x ./test/sandbox | tee -a $(BENCH_TREE).new
	@grep -q '^ok ' $(BENCH_TREE).new && mv $(BENCH_TREE).new $(BENCH_TREE)
	$(MAKE) --no-print-directory docs

# What one private repository's credential costs a fleet (docs/install.md#private-repositories):
# 1,000 clusters with a delivered Application each on that repository, with the real apiserver and
# manager (envtest) and each cluster's agent answering its carrier: carriers and their writes per
# cluster, then those of one rotation.
BENCH_CREDENTIALS := test/bench/results/credentials.txt

.PHONY: bench-credentials
bench-credentials: kube-assets ## Run the repository credentials' benchmark (1,000 clusters on one credential: carriers and writes per cluster, and one rotation) into test/bench/results/credentials.txt, then make docs; prints how long the last run took first
	@t=$$({ sed -n -E 's/^ok .*[[:space:]]([0-9.]+)s$$/\1/p' $(BENCH_CREDENTIALS) 2>/dev/null || true; } | head -1); \
		if [ -n "$$t" ]; then echo "The last run took $$t s ($(BENCH_CREDENTIALS))."; else echo "No earlier run: $(BENCH_CREDENTIALS) does not exist yet."; fi
	@echo "# make bench-credentials, revision $(REVISION):" > $(BENCH_CREDENTIALS).new
	KUBEBUILDER_ASSETS=$(KUBE_ASSETS) go test -count=1 -timeout 30m -run '^$$' -bench '^BenchmarkCredentialsOfAFleet$$' -benchtime=1x ./internal/controller | tee -a $(BENCH_CREDENTIALS).new
	@grep -q '^ok ' $(BENCH_CREDENTIALS).new && mv $(BENCH_CREDENTIALS).new $(BENCH_CREDENTIALS)
	$(MAKE) --no-print-directory docs

.PHONY: bench-age
bench-age: ## Print how many commits under internal/ and cmd/ each results file is behind; fail when one the README quotes is behind (the rule: docs/benchmarks.md)
	@go run ./hack/benchage

.PHONY: bench-go
bench-go: kube-assets chromium ## Run the Go benchmarks (feedback -> report latency, a report rebuild, the RollingSync barrier per change, the cache's interning, the fleet view at 5,000 clusters in Chromium) into test/bench/results/gobench.txt, then make docs
	@echo "# make bench-go at $(REVISION), one command per package:" > $(BENCH_GO)
	for cmd in "-benchtime=1x -skip ^BenchmarkCredentialsOfAFleet$$ ./internal/controller" "./internal/report" "./internal/appstatus" "./internal/intern" "-short -benchtime=1x ./internal/dashboard"; do \
		echo "# go test -run '^\$$' -bench . $$cmd" | tee -a $(BENCH_GO); \
		KUBEBUILDER_ASSETS=$(KUBE_ASSETS) REQUIRE_CHROMIUM=1 go test -run '^$$' -bench . $$cmd | tee -a $(BENCH_GO); done
	$(MAKE) --no-print-directory docs

.PHONY: kube-assets
kube-assets: $(KUBE_ASSETS)/kube-apiserver $(KUBE_ASSETS)/etcd $(KUBE_ASSETS)/kube-controller-manager ## Build kube-apiserver, etcd and kube-controller-manager once and print their directory
	@echo $(KUBE_ASSETS)

.PHONY: install-tools
install-tools: $(KUBECTL) $(HELM) ## Build kubectl and helm once (render and apply config/ and the chart) and print their paths
	@echo $(KUBECTL)
	@echo $(HELM)

.PHONY: argocd-assets
argocd-assets: $(sort $(ARGOCD_ASSETS)/argocd-git-ask-pass $(MANAGED_ARGOCD_ASSETS)/argocd-git-ask-pass) ## Build the Argo CD components and the argocd CLI (one binary) of ARGOCD_VERSION and MANAGED_ARGOCD_VERSION once, and print their directories
	@echo $(sort $(ARGOCD_ASSETS) $(MANAGED_ARGOCD_ASSETS))

.PHONY: sandbox-deps
sandbox-deps: ## Install what the sandbox runs from Debian: redis-server (Argo CD's cache), git, and its nodes' containerd, runc and CNI plugins
	@command -v redis-server >/dev/null && command -v git >/dev/null && command -v containerd >/dev/null && command -v runc >/dev/null && [ -x /usr/lib/cni/bridge ] || { \
		echo "Installing redis-server, git, containerd, runc and containernetworking-plugins from Debian" >&2; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server git containerd runc containernetworking-plugins >/dev/null; }

.PHONY: chromium
chromium: ## Install Debian's headless Chromium, which the fleet view's browser tests drive
	@command -v chromium >/dev/null || { \
		echo "Installing chromium from Debian (the fleet view's browser tests)" >&2; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; }

.PHONY: container-deps
container-deps: ## Install podman and runc from Debian: make image builds with podman, and the image's tests run it with runc
	@command -v podman >/dev/null && command -v runc >/dev/null || { \
		echo "Installing podman and runc from Debian (the controller image and its tests)" >&2; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq podman runc >/dev/null; }

.PHONY: addon-assets
addon-assets: $(CLUSTER_PROXY_ASSETS)/proxy-server $(CLUSTER_PROXY_ASSETS)/proxy-agent $(CLUSTER_PROXY_ASSETS)/cluster-proxy $(CLUSTER_PROXY_ASSETS)/pod-loopback $(CLUSTER_PROXY_ASSETS)/addon-agent $(MSA_ASSETS)/managed-serviceaccount $(MSA_ASSETS)/agent ## Build OCM's cluster-proxy (with the konnectivity server and agent) and managed-serviceaccount add-ons, once, and print their directories
	@echo $(CLUSTER_PROXY_ASSETS) $(MSA_ASSETS)

.PHONY: ocm-assets
ocm-assets: $(OCM_ASSETS)/work-agent $(OCM_ASSETS)/placement $(OCM_ASSETS)/registration-controller $(OCM_ASSETS)/registration-agent ## Build the OCM agents and hub controllers the lab runs, once, and print their directory
	@echo $(OCM_ASSETS)

##@ Tools (built once per machine into TOOLS_CACHE, which bin/ links to; never rebuilt while present)

$(OCM_ASSETS)/work-agent:
	@echo "Building the OCM work agent $(OCM_VERSION) into $(OCM_ASSETS) (first time only, ~5 min)" >&2
	cd hack/tools/ocm && go build -o $@ ./work-agent

# One binary per release: the controllers, the repo-server, the API server with its web UI, and
# the argocd CLI (see hack/tools/argocd/build.sh); argocd-git-ask-pass, its last link, marks a
# whole build (a build of an earlier main.go, without it, is made again).
$(BIN)/argocd/%/argocd-git-ask-pass:
	@echo "Building Argo CD $* with its web UI and CLI into $(BIN)/argocd/$* (first time only, ~15 min; ARGOCD_UI=0: without the UI)" >&2
	hack/tools/argocd/build.sh $* $(BIN)/argocd/$*

$(OCM_ASSETS)/placement:
	@echo "Building the OCM placement controller $(OCM_VERSION) into $(OCM_ASSETS) (first time only)" >&2
	cd hack/tools/ocm && go build -o $@ ./placement

$(OCM_ASSETS)/registration-controller $(OCM_ASSETS)/registration-agent:
	@echo "Building the OCM $(notdir $@) $(OCM_VERSION) into $(OCM_ASSETS) (first time only)" >&2
	cd hack/tools/ocm && go build -o $@ ./$(notdir $@)

$(CLUSTER_PROXY_ASSETS)/proxy-server:
	@echo "Building the konnectivity server cluster-proxy $(CLUSTER_PROXY_VERSION) runs into $(CLUSTER_PROXY_ASSETS) (first time only)" >&2
	cd hack/tools/cluster-proxy && go build -o $@ sigs.k8s.io/apiserver-network-proxy/cmd/server

$(CLUSTER_PROXY_ASSETS)/proxy-agent:
	@echo "Building the konnectivity agent cluster-proxy $(CLUSTER_PROXY_VERSION) runs into $(CLUSTER_PROXY_ASSETS) (first time only)" >&2
	cd hack/tools/cluster-proxy && go build -o $@ sigs.k8s.io/apiserver-network-proxy/cmd/agent

$(CLUSTER_PROXY_ASSETS)/cluster-proxy:
	@echo "Building cluster-proxy $(CLUSTER_PROXY_VERSION) (its user server) into $(CLUSTER_PROXY_ASSETS) (first time only)" >&2
	cd hack/tools/cluster-proxy && go build -o $@ open-cluster-management.io/cluster-proxy/cmd/cluster-proxy

# What the network of cluster-proxy's agent pod gives it, which the lab has no pods for (see its doc).
$(CLUSTER_PROXY_ASSETS)/pod-loopback: hack/tools/cluster-proxy/pod-loopback/main.go
	cd hack/tools/cluster-proxy && go build -o $@ ./pod-loopback

# cluster-proxy's addon-agent (its lease, by which OCM calls the add-on available), without what
# only a pod can give it (see its doc).
$(CLUSTER_PROXY_ASSETS)/addon-agent: hack/tools/cluster-proxy/addon-agent/main.go
	cd hack/tools/cluster-proxy && go build -o $@ ./addon-agent

$(MSA_ASSETS)/managed-serviceaccount:
	@echo "Building managed-serviceaccount $(MSA_VERSION) (manager and agent) into $(MSA_ASSETS) (first time only)" >&2
	cd hack/tools/managed-serviceaccount && go build -o $@ open-cluster-management.io/managed-serviceaccount/cmd
	cd hack/tools/managed-serviceaccount && cp "$$(go list -m -f '{{.Dir}}' open-cluster-management.io/managed-serviceaccount)/config/crd/bases/authentication.open-cluster-management.io_managedserviceaccounts.yaml" $(MSA_ASSETS)/

# Its agent without the health server upstream binds to :8000 of every interface (see its doc).
$(MSA_ASSETS)/agent: hack/tools/managed-serviceaccount/agent/main.go
	cd hack/tools/managed-serviceaccount && go build -o $@ ./agent

$(KUBE_ASSETS)/kube-apiserver $(KUBE_ASSETS)/etcd:
	@echo "Building kube-apiserver and etcd $(KUBE_VERSION) into $(KUBE_ASSETS) (first time only, ~5 min)" >&2
	cd hack/tools/kube && go build -o $(KUBE_ASSETS)/ ./kube-apiserver ./etcd

# The lab's nodes (internal/sandbox/node.go): the kubelet, the scheduler, and the one program of the
# images they run (no registry answers here).
.PHONY: node-assets
node-assets: $(KUBE_ASSETS)/kubelet $(KUBE_ASSETS)/kube-scheduler $(KUBE_ASSETS)/lab-workload ## Build the lab nodes' kubelet, kube-scheduler and image program once

$(KUBE_ASSETS)/kubelet $(KUBE_ASSETS)/kube-scheduler:
	@echo "Building kubelet and kube-scheduler $(KUBE_VERSION) into $(KUBE_ASSETS) (first time only, ~5 min)" >&2
	cd hack/tools/kube && go build -o $(KUBE_ASSETS)/ ./kubelet ./kube-scheduler

$(KUBE_ASSETS)/lab-workload: hack/tools/kube/lab-workload/main.go
	cd hack/tools/kube && CGO_ENABLED=0 go build -o $@ ./lab-workload

$(KUBE_ASSETS)/kube-controller-manager:
	@echo "Building kube-controller-manager $(KUBE_VERSION) into $(KUBE_ASSETS) (first time only)" >&2
	cd hack/tools/kube && go build -o $(KUBE_ASSETS)/ ./kube-controller-manager

$(KUBECTL):
	@echo "Building kubectl $(KUBE_VERSION) into $(KUBE_ASSETS) (first time only, ~1 min after kube-assets)" >&2
	cd hack/tools/kube && go build -ldflags "-X k8s.io/component-base/version.gitVersion=v$(KUBE_VERSION) -X k8s.io/client-go/pkg/version.gitVersion=v$(KUBE_VERSION)" -o $@ ./kubectl

$(HELM):
	@echo "Building helm $(HELM_VERSION) into $(HELM_ASSETS) (first time only, ~3 min)" >&2
	cd hack/tools/helm && go build -ldflags "-X helm.sh/helm/v3/internal/version.version=v$(HELM_VERSION)" -o $@ helm.sh/helm/v3/cmd/helm

$(CONTROLLER_GEN):
	GOBIN=$(dir $@) go install sigs.k8s.io/controller-tools/cmd/controller-gen@$(CONTROLLER_GEN_VERSION)
	mv $(dir $@)controller-gen $@

$(GOLANGCI_LINT):
	GOBIN=$(dir $@) go install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_LINT_VERSION)
	mv $(dir $@)golangci-lint $@

$(ACTIONLINT):
	GOBIN=$(dir $@) go install github.com/rhysd/actionlint/cmd/actionlint@$(ACTIONLINT_VERSION)
	mv $(dir $@)actionlint $@
