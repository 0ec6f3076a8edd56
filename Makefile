# argocd-pull. `make help` lists the targets.

SHELL := /usr/bin/env bash -o pipefail
.SHELLFLAGS := -ec
.DEFAULT_GOAL := help

BIN := $(CURDIR)/bin
# The apiserver and etcd version is the one hack/tools/kube pins; tests find the binaries here.
KUBE_VERSION := $(shell sed -n 's/^\tk8s.io\/kubernetes v//p' hack/tools/kube/go.mod)
KUBE_ASSETS := $(BIN)/k8s/$(KUBE_VERSION)

# The OCM work agent (end-to-end tests, sandbox) is built by hack/tools/ocm at the version it pins.
OCM_VERSION := $(shell sed -n 's/^\topen-cluster-management.io\/ocm v//p' hack/tools/ocm/go.mod)
OCM_ASSETS := $(BIN)/ocm/v$(OCM_VERSION)

# Argo CD (sandbox) is built by hack/tools/argocd at the version it pins.
ARGOCD_VERSION := $(shell sed -n 's/^require github.com\/argoproj\/argo-cd\/v3 v//p; s/^\tgithub.com\/argoproj\/argo-cd\/v3 v//p' hack/tools/argocd/go.mod)
ARGOCD_ASSETS := $(BIN)/argocd/v$(ARGOCD_VERSION)

CONTROLLER_GEN_VERSION := v0.21.0
CONTROLLER_GEN := $(BIN)/controller-gen-$(CONTROLLER_GEN_VERSION)
GOLANGCI_LINT_VERSION := v2.6.2
GOLANGCI_LINT := $(BIN)/golangci-lint-$(GOLANGCI_LINT_VERSION)

VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X github.com/argocd-pull/argocd-pull/internal/cli.version=$(VERSION)
GO_TEST_FLAGS ?=

##@ General

.PHONY: help
help: ## Show this help
	@awk 'BEGIN {FS = ":.*##"; printf "Usage: make <target>\n"} /^[a-zA-Z0-9_-]+:.*?##/ { printf "  \033[36m%-14s\033[0m %s\n", $$1, $$2 } /^##@/ { printf "\n\033[1m%s\033[0m\n", substr($$0, 5) }' $(MAKEFILE_LIST)

##@ Development

.PHONY: demo
demo: build kube-assets ocm-assets argocd-assets sandbox-deps ## Start the local lab (hub + 2 managed clusters, real components); 'bin/argocd-pull sandbox down' stops it
	$(BIN)/argocd-pull sandbox up --clusters 2 --dir .sandbox

.PHONY: build
build: ## Build bin/argocd-pull
	go build -ldflags "$(LDFLAGS)" -o $(BIN)/argocd-pull ./cmd/argocd-pull

.PHONY: generate
generate: $(CONTROLLER_GEN) ## Generate deepcopy code, CRDs and RBAC from the API types and markers
	$(CONTROLLER_GEN) object paths=./api/...
	$(CONTROLLER_GEN) crd paths=./api/... output:crd:artifacts:config=config/crd/bases
	$(CONTROLLER_GEN) rbac:roleName=argocd-pull paths=./internal/controller/... output:rbac:artifacts:config=config/rbac

.PHONY: verify
verify: generate ## Check that generated files and go.mod are up to date
	go mod tidy
	@git diff --exit-code -- api config go.mod go.sum || { echo "Generated files or go.mod are out of date: run 'make generate' and 'go mod tidy', then commit."; exit 1; }

.PHONY: lint
lint: $(GOLANGCI_LINT) ## Run gofmt, go vet and golangci-lint
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	go vet ./...
	$(GOLANGCI_LINT) run ./...

##@ Test

.PHONY: test
test: kube-assets ocm-assets argocd-assets sandbox-deps ## Run all tests: unit, real-apiserver, end-to-end and the sandbox
	KUBEBUILDER_ASSETS=$(KUBE_ASSETS) OCM_ASSETS=$(OCM_ASSETS) ARGOCD_ASSETS=$(ARGOCD_ASSETS) go test $(GO_TEST_FLAGS) ./...

.PHONY: test-unit
test-unit: ## Run the tests that need no apiserver
	go test -short $(GO_TEST_FLAGS) ./...

BENCH_FLAGS ?= --clusters 100,1000 --applicationsets 10

.PHONY: bench
bench: kube-assets build ## Run the scale benchmark (BENCH_FLAGS, default N=100,1000 clusters, A=10) and the latency benchmark; not part of make test
	KUBEBUILDER_ASSETS=$(KUBE_ASSETS) go run ./test/bench --controller $(BIN)/argocd-pull $(BENCH_FLAGS)
	KUBEBUILDER_ASSETS=$(KUBE_ASSETS) go test -run '^$$' -bench . -benchtime=1x ./internal/controller

.PHONY: kube-assets
kube-assets: $(KUBE_ASSETS)/kube-apiserver $(KUBE_ASSETS)/etcd $(KUBE_ASSETS)/kube-controller-manager ## Build kube-apiserver, etcd and kube-controller-manager once and print their directory
	@echo $(KUBE_ASSETS)

.PHONY: argocd-assets
argocd-assets: $(ARGOCD_ASSETS)/argocd ## Build the Argo CD components (one binary) once and print their directory
	@echo $(ARGOCD_ASSETS)

.PHONY: sandbox-deps
sandbox-deps: ## Install what the sandbox runs from Debian: redis-server (Argo CD's cache) and git
	@command -v redis-server >/dev/null && command -v git >/dev/null || { \
		echo "Installing redis-server and git from Debian" >&2; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server git >/dev/null; }

.PHONY: ocm-assets
ocm-assets: $(OCM_ASSETS)/work-agent $(OCM_ASSETS)/placement ## Build the OCM work agent and placement controller once and print their directory
	@echo $(OCM_ASSETS)

##@ Tools (built once into bin/, never rebuilt while present)

$(OCM_ASSETS)/work-agent:
	@echo "Building the OCM work agent $(OCM_VERSION) into $(OCM_ASSETS) (first time only, ~5 min)" >&2
	cd hack/tools/ocm && go build -o $@ ./work-agent

$(ARGOCD_ASSETS)/argocd:
	@echo "Building Argo CD $(ARGOCD_VERSION) into $(ARGOCD_ASSETS) (first time only, ~5 min)" >&2
	cd hack/tools/argocd && go build -o $@ .

$(OCM_ASSETS)/placement:
	@echo "Building the OCM placement controller $(OCM_VERSION) into $(OCM_ASSETS) (first time only)" >&2
	cd hack/tools/ocm && go build -o $@ ./placement

$(KUBE_ASSETS)/kube-apiserver $(KUBE_ASSETS)/etcd:
	@echo "Building kube-apiserver and etcd $(KUBE_VERSION) into $(KUBE_ASSETS) (first time only, ~5 min)" >&2
	cd hack/tools/kube && go build -o $(KUBE_ASSETS)/ ./kube-apiserver ./etcd

$(KUBE_ASSETS)/kube-controller-manager:
	@echo "Building kube-controller-manager $(KUBE_VERSION) into $(KUBE_ASSETS) (first time only)" >&2
	cd hack/tools/kube && go build -o $(KUBE_ASSETS)/ ./kube-controller-manager

$(CONTROLLER_GEN):
	GOBIN=$(BIN) go install sigs.k8s.io/controller-tools/cmd/controller-gen@$(CONTROLLER_GEN_VERSION)
	mv $(BIN)/controller-gen $@

$(GOLANGCI_LINT):
	GOBIN=$(BIN) go install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_LINT_VERSION)
	mv $(BIN)/golangci-lint $@
