# gpustack-operator: build, generate, test and the local demo cluster.
#
# Third-party binaries (Kubernetes control plane, etcd, KWOK, Kueue, nfd-master, controller-gen, the Crossplane
# CLI, helm) are built from the Go module proxy through the wrapper modules in hack/tools/ into the git-ignored
# bin/, once: each one has a version stamp in bin/.stamp/, and the Go build cache makes a rebuild after a fresh
# clone a relink.

SHELL := /usr/bin/env bash
.SHELLFLAGS := -euo pipefail -c
export GOFLAGS := -buildvcs=false
# go-nvml's cgo wrappers name NVML calls the 13.x headers mark deprecated; the warnings say nothing useful.
export CGO_CFLAGS := -O2 -g -Wno-deprecated-declarations

ROOT := $(abspath .)
BIN := $(ROOT)/bin
STAMP := $(BIN)/.stamp
ASSETS := $(BIN)/assets

K8S_VERSION := v1.35.4
ETCD_VERSION := v3.6.16
KWOK_VERSION := v0.8.0
KUEUE_VERSION := v0.17.0
NFD_VERSION := v0.19.0
CONTROLLER_GEN_VERSION := v0.20.1
CROSSPLANE_VERSION := v2.4.0
OPA_VERSION := v1.22.3
GATEKEEPER_VERSION := v3.23.1
# The newest Crossplane whose module still holds the CLI (from v2.3 on it is github.com/crossplane/cli, which
# the module proxy does not serve here); its xpkg format is the one v2.4 installs.
CRANK_VERSION := v2.2.1
HELM_VERSION := v3.22.0

# VERSION tags the images and packages; OUTPUT is where make package writes them.
VERSION ?= v0.1.0
OUTPUT := $(ROOT)/_output

K8S_MINOR := $(word 2,$(subst ., ,$(K8S_VERSION)))
K8S_LDFLAGS := $(foreach p,k8s.io/client-go/pkg/version k8s.io/component-base/version,\
	-X $(p).gitVersion=$(K8S_VERSION) -X $(p).gitMajor=1 -X $(p).gitMinor=$(K8S_MINOR) \
	-X $(p).gitTreeState=clean -X $(p).buildDate=1970-01-01T00:00:00Z)

# say prints a progress line for the slow steps.
say = @echo ">> $(1)" >&2

.PHONY: all
all: build

##@ Build

.PHONY: build
build: ## Build the commands in cmd/ into bin/.
	go build -o $(BIN)/ ./cmd/...

.PHONY: package
package: $(STAMP)/crank-$(CRANK_VERSION) ## Build the images and the Crossplane packages offline into _output/package.
	$(call say,building the images and the Crossplane packages $(VERSION))
	CGO_ENABLED=0 go build -trimpath -ldflags=-s -o $(OUTPUT)/bin/gpustack-function ./cmd/gpustack-function
	go build -trimpath -ldflags=-s -o $(OUTPUT)/bin/gpustack-operator ./cmd/gpustack-operator
	go run ./hack/package --out $(OUTPUT)/package --crank $(BIN)/crank --version $(VERSION) \
		--function-binary $(OUTPUT)/bin/gpustack-function --operator-binary $(OUTPUT)/bin/gpustack-operator

.PHONY: generate
generate: $(STAMP)/controller-gen-$(CONTROLLER_GEN_VERSION) ## Regenerate deepcopy code and CRDs from apis/.
	$(BIN)/controller-gen object:headerFile=hack/boilerplate.go.txt paths=./apis/...
	$(BIN)/controller-gen crd:allowDangerousTypes=false paths=./apis/... output:crd:artifacts:config=package/crds
	$(BIN)/controller-gen rbac:roleName=gpustack-operator-worker paths=./internal/controller/... paths=./internal/webhooks/... paths=./cmd/gpustack-operator/... \
		output:rbac:artifacts:config=package/rbac/worker
	$(BIN)/controller-gen rbac:roleName=gpustack-operator-device-manager paths=./deviceagent/... \
		output:rbac:artifacts:config=package/rbac/device-manager
	$(BIN)/controller-gen rbac:roleName=gpustack-operator-cleanup paths=./internal/uninstall/... \
		output:rbac:artifacts:config=package/rbac/cleanup

##@ Tools (built once into bin/)

.PHONY: tools
tools: $(STAMP)/kube-$(K8S_VERSION) $(STAMP)/etcd-$(ETCD_VERSION) $(STAMP)/kwok-$(KWOK_VERSION) \
	$(STAMP)/kueue-$(KUEUE_VERSION) $(STAMP)/nfd-master-$(NFD_VERSION) $(STAMP)/controller-gen-$(CONTROLLER_GEN_VERSION) \
	$(STAMP)/crossplane-$(CROSSPLANE_VERSION) $(STAMP)/opa-$(OPA_VERSION) $(STAMP)/gator-$(GATEKEEPER_VERSION) \
	$(STAMP)/crank-$(CRANK_VERSION) $(STAMP)/helm-$(HELM_VERSION) \
	$(STAMP)/assets ## Build every third-party binary the tests and the demo need.

$(STAMP)/kube-$(K8S_VERSION): hack/tools/k8s/go.mod
	$(call say,building kube-apiserver kube-controller-manager kube-scheduler $(K8S_VERSION) (first build takes about 10 minutes))
	cd hack/tools/k8s && for c in kube-apiserver kube-controller-manager kube-scheduler; do \
		echo ">>   $$c" >&2; go build -trimpath -ldflags "$(K8S_LDFLAGS)" -o $(BIN)/$$c k8s.io/kubernetes/cmd/$$c; done
	@mkdir -p $(STAMP) && touch $@

$(STAMP)/etcd-$(ETCD_VERSION): hack/tools/etcd/go.mod
	$(call say,building etcd $(ETCD_VERSION) (first build takes a few minutes))
	cd hack/tools/etcd && go build -trimpath -o $(BIN)/etcd go.etcd.io/etcd/server/v3
	@mkdir -p $(STAMP) && touch $@

$(STAMP)/kwok-$(KWOK_VERSION): hack/tools/kwok/go.mod
	$(call say,building kwok $(KWOK_VERSION))
	cd hack/tools/kwok && go build -trimpath -o $(BIN)/kwok sigs.k8s.io/kwok/cmd/kwok
	@mkdir -p $(STAMP) && touch $@

$(STAMP)/kueue-$(KUEUE_VERSION): hack/tools/kueue/go.mod
	$(call say,building kueue $(KUEUE_VERSION) (first build takes a few minutes))
	cd hack/tools/kueue && go build -trimpath -ldflags "-X sigs.k8s.io/kueue/pkg/version.GitVersion=$(KUEUE_VERSION)" \
		-o $(BIN)/kueue sigs.k8s.io/kueue/cmd/kueue
	@mkdir -p $(STAMP) && touch $@

$(STAMP)/nfd-master-$(NFD_VERSION): hack/tools/nfd/go.mod
	$(call say,building nfd-master $(NFD_VERSION))
	cd hack/tools/nfd && go build -trimpath -ldflags "-X sigs.k8s.io/node-feature-discovery/pkg/version.version=$(NFD_VERSION)" \
		-o $(BIN)/nfd-master sigs.k8s.io/node-feature-discovery/cmd/nfd-master
	@mkdir -p $(STAMP) && touch $@

$(STAMP)/controller-gen-$(CONTROLLER_GEN_VERSION): hack/tools/controller-gen/go.mod
	$(call say,building controller-gen $(CONTROLLER_GEN_VERSION))
	cd hack/tools/controller-gen && go build -trimpath -o $(BIN)/controller-gen sigs.k8s.io/controller-tools/cmd/controller-gen
	@mkdir -p $(STAMP) && touch $@

$(STAMP)/crossplane-$(CROSSPLANE_VERSION): hack/tools/crossplane/go.mod
	$(call say,building crossplane $(CROSSPLANE_VERSION) (first build takes several minutes))
	cd hack/tools/crossplane && go build -trimpath -o $(BIN)/crossplane \
		-ldflags "-X github.com/crossplane/crossplane-runtime/v2/pkg/version.version=$(CROSSPLANE_VERSION)" \
		github.com/crossplane/crossplane/v2/cmd/crossplane
	@mkdir -p $(STAMP) && touch $@

$(STAMP)/crank-$(CRANK_VERSION): hack/tools/crank/go.mod
	$(call say,building the crossplane CLI $(CRANK_VERSION) (first build takes several minutes))
	cd hack/tools/crank && go build -trimpath -o $(BIN)/crank github.com/crossplane/crossplane/v2/cmd/crank
	@mkdir -p $(STAMP) && touch $@

$(STAMP)/helm-$(HELM_VERSION): hack/tools/helm/go.mod
	$(call say,building helm $(HELM_VERSION) (first build takes several minutes))
	cd hack/tools/helm && go build -trimpath -o $(BIN)/helm helm.sh/helm/v3/cmd/helm
	@mkdir -p $(STAMP) && touch $@

$(STAMP)/opa-$(OPA_VERSION): hack/tools/opa/go.mod
	$(call say,building opa $(OPA_VERSION))
	cd hack/tools/opa && go build -trimpath -o $(BIN)/opa github.com/open-policy-agent/opa
	@mkdir -p $(STAMP) && touch $@

$(STAMP)/gator-$(GATEKEEPER_VERSION): hack/tools/gator/go.mod
	$(call say,building gator $(GATEKEEPER_VERSION) (first build takes several minutes))
	cd hack/tools/gator && go build -trimpath -o $(BIN)/gator github.com/open-policy-agent/gatekeeper/v3/cmd/gator
	@mkdir -p $(STAMP) && touch $@

# Assets copied out of the pinned modules: Kueue's CRDs and webhook manifests, NFD's CRDs, Crossplane's CRDs
# and KWOK's stages.
# They are read from the module cache rather than committed, so they always match the binaries.
moddir = $$(cd hack/tools/$(1) && go list -m -f '{{.Dir}}' $(2))
$(STAMP)/assets: hack/tools/kueue/go.mod hack/tools/nfd/go.mod hack/tools/kwok/go.mod hack/tools/crossplane/go.mod
	$(call say,collecting CRDs and KWOK stages from the module cache)
	rm -rf $(ASSETS) && mkdir -p $(ASSETS)/kueue-crds $(ASSETS)/kwok-stages $(ASSETS)/crossplane-crds
	kueue=$(call moddir,kueue,sigs.k8s.io/kueue); nfd=$(call moddir,nfd,sigs.k8s.io/node-feature-discovery); \
	kwok=$(call moddir,kwok,sigs.k8s.io/kwok); crossplane=$(call moddir,crossplane,github.com/crossplane/crossplane/v2); \
	cp $$kueue/config/components/crd/bases/*.yaml $(ASSETS)/kueue-crds/; \
	cp $$crossplane/cluster/crds/*.yaml $(ASSETS)/crossplane-crds/; \
	cp $$kueue/config/components/webhook/manifests.yaml $(ASSETS)/kueue-webhooks.yaml; \
	cp $$nfd/deployment/base/nfd-crds/nfd-api-crds.yaml $(ASSETS)/nfd-crds.yaml; \
	for s in node/fast/node-initialize node/heartbeat-with-lease/node-heartbeat-with-lease \
		pod/fast/pod-ready pod/fast/pod-complete pod/fast/pod-delete; do \
		cp $$kwok/kustomize/stage/$$s.yaml $(ASSETS)/kwok-stages/; done; \
	chmod -R u+w $(ASSETS)
	@mkdir -p $(STAMP) && touch $@

##@ Test

# The Helm and package tests start local clusters of their own, so they run after the end-to-end suite's and
# one after the other, not beside it on two cores.
.PHONY: test
test: tools build package ## Run every test: unit, envtest, packages, end-to-end and Helm on local clusters, and the Crossplane render.
	GPUSTACK_BIN=$(BIN) KUBEBUILDER_ASSETS=$(BIN) go test -count=1 -timeout 45m \
		$$(go list ./... | grep -v -e /test/helm -e /test/packages)
	GPUSTACK_BIN=$(BIN) PACKAGE_DIR=$(OUTPUT)/package go test -p 1 -count=1 -timeout 20m ./test/helm/ ./test/packages/
	cd hack/tools/crossplane && GPUSTACK_BIN=$(BIN) go test -count=1 -timeout 10m ./...

.PHONY: bench
bench: ## Run the benchmarks (numbers in the README).
	go test -run '^$$' -bench . -benchtime 20x ./internal/embedded/

.PHONY: test-unit
test-unit: ## Run the tests that need no control plane.
	go test -count=1 ./...

##@ Demo

DEMO_DIR ?= $(ROOT)/.demo
INVENTORY ?= examples/clusters/walkthrough.yaml

.PHONY: demo
demo: tools build ## Start the local cluster with the walkthrough's nodes (or INVENTORY=FILE) in the background.
	$(BIN)/localcluster up --bin $(BIN) --dir $(DEMO_DIR) --inventory $(INVENTORY) --operator $(BIN)/gpustack-operator

.PHONY: demo-down
demo-down: ## Stop the local cluster started by make demo; leaves no process behind.
	@if [ -x $(BIN)/localcluster ]; then $(BIN)/localcluster down --dir $(DEMO_DIR); \
	else go run ./hack/localcluster down --dir $(DEMO_DIR); fi

.PHONY: help
help: ## Show the targets.
	@awk 'BEGIN {FS = ":.*##"} /^[a-zA-Z_-]+:.*?##/ { printf "  %-12s %s\n", $$1, $$2 }' $(MAKEFILE_LIST)
