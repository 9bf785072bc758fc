# gpustack-operator: build, generate, test and the local demo cluster.
#
# Third-party binaries (Kubernetes control plane, etcd, KWOK, Kueue, nfd-master, controller-gen, the Crossplane
# CLI, helm) are built from the Go module proxy through the wrapper modules in hack/tools/ into the git-ignored
# bin/, once: each one has a version stamp in bin/.stamp/, and a fresh clone copies them from TOOLS_CACHE,
# where the first clone of this machine to build them left them (hack/toolcache/toolcache.sh); the Go build
# cache makes a rebuild a relink.

SHELL := /usr/bin/env bash
.SHELLFLAGS := -euo pipefail -c
export GOFLAGS := -buildvcs=false
# go-nvml's cgo wrappers name NVML calls the 13.x headers mark deprecated; the warnings say nothing useful.
export CGO_CFLAGS := -O2 -g -Wno-deprecated-declarations

ROOT := $(abspath .)
BIN := $(ROOT)/bin
# TOOLS_CACHE holds the third-party binaries of each build, keyed by everything that goes into it, for every clone
# of this machine (hack/toolcache/toolcache.sh); empty builds them in every clone.
TOOLS_CACHE ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/gpustack-operator/tools
export TOOLS_CACHE
STAMP := $(BIN)/.stamp
ASSETS := $(BIN)/assets

K8S_VERSION := v1.36.3
ETCD_VERSION := v3.6.16
KWOK_VERSION := v0.8.0
KUEUE_VERSION := v0.19.2
# The Kueue the chart bundled before KUEUE_VERSION: test/helm's upgrade starts the cluster's Kueue on it.
KUEUE_PREVIOUS_VERSION := v0.17.0
NFD_VERSION := v0.19.0
LOCAL_PATH_VERSION := v0.0.30
CONTROLLER_GEN_VERSION := v0.20.1
CROSSPLANE_VERSION := v2.4.0
OPA_VERSION := v1.22.3
GATEKEEPER_VERSION := v3.23.1
# The newest Crossplane whose module still holds the CLI (from v2.3 on it is github.com/crossplane/cli, which
# the module proxy does not serve here); its xpkg format is the one v2.4 installs.
CRANK_VERSION := v2.2.1
HELM_VERSION := v3.22.0
GOLANGCI_LINT_VERSION := v2.15.0

# VERSION tags the images and packages; OUTPUT is where make package writes them.
VERSION ?= v0.2.0
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
build: ## Build the commands in cmd/ and the local cluster command into bin/.
	go build -o $(BIN)/ ./cmd/... ./hack/localcluster

.PHONY: package
package: $(STAMP)/crank-$(CRANK_VERSION) chart ## Build the images, the Crossplane packages and the Helm chart offline into _output/package.
	$(call say,building the images and the Crossplane packages $(VERSION))
	CGO_ENABLED=0 go build -trimpath -ldflags=-s -o $(OUTPUT)/bin/gpustack-function ./cmd/gpustack-function
	go build -trimpath -ldflags=-s -o $(OUTPUT)/bin/gpustack-operator ./cmd/gpustack-operator
	go run ./hack/package --out $(OUTPUT)/package --crank $(BIN)/crank --version $(VERSION) \
		--function-binary $(OUTPUT)/bin/gpustack-function --operator-binary $(OUTPUT)/bin/gpustack-operator

.PHONY: operator-image
operator-image: ## Build the operator's image alone into _output/package/images (the demo's real nodes run it).
	go build -trimpath -ldflags=-s -o $(OUTPUT)/bin/gpustack-operator ./cmd/gpustack-operator
	go run ./hack/package --out $(OUTPUT)/package --version $(VERSION) --operator-image-only \
		--operator-binary $(OUTPUT)/bin/gpustack-operator

# openapi-gen writes apis/$(1)/openapi's OpenAPI definitions of meta/v1, runtime and the packages $(2).
define openapi-gen
go run k8s.io/kube-openapi/cmd/openapi-gen --go-header-file hack/boilerplate.go.txt --output-dir apis/$(1)/openapi \
	--output-pkg github.com/gpustack/gpustack-operator/apis/$(1)/openapi --output-file zz_generated.openapi.go \
	--output-model-name-file zz_generated.model_name.go --report-filename /dev/null \
	k8s.io/apimachinery/pkg/apis/meta/v1 k8s.io/apimachinery/pkg/runtime $(2)
endef

# The one way to generate. The policies' Gatekeeper files and Argo CD's ConfigMap are golden files their tests
# write with -update (and check without it); verify-generate fails when any of them drifts.
.PHONY: generate
generate: $(STAMP)/controller-gen-$(CONTROLLER_GEN_VERSION) ## Regenerate everything generated: deepcopy code, CRDs, roles, chart values, the system namespaces' copies, Gatekeeper policies, Argo CD's ConfigMap.
	go run ./hack/chartvalues
	go run ./hack/systemnamespaces
	env -u GPUSTACK_BIN go test -count=1 ./policies -run '^TestGatekeeper$$' -update >/dev/null
	go test -count=1 ./test/gitops -run '^TestArgoCDConfigMap$$' -update >/dev/null
	$(BIN)/controller-gen object:headerFile=hack/boilerplate.go.txt paths=./apis/...
	$(BIN)/controller-gen crd:allowDangerousTypes=false paths=./apis/... output:crd:artifacts:config=package/crds
	# The settings API's OpenAPI definitions, by the openapi-gen of the kube-openapi the main module serves them with.
	$(call openapi-gen,settings,k8s.io/apimachinery/pkg/version github.com/gpustack/gpustack-operator/apis/settings/v1)
	# The worker-gateway's, for kubectl explain of gateway.gpustack.ai/v1 (its kinds hold worker.gpustack.ai/v1's types).
	$(call openapi-gen,gateway,k8s.io/apimachinery/pkg/version k8s.io/apimachinery/pkg/util/intstr k8s.io/apimachinery/pkg/api/resource \
		github.com/gpustack/gpustack-operator/apis/worker/v1 github.com/gpustack/gpustack-operator/apis/gateway/v1)
	$(BIN)/controller-gen rbac:roleName=gpustack-operator-worker paths=./internal/controller/... paths=./internal/webhooks/... paths=./internal/kueueconfig/... paths=./internal/settingsapi/... paths=./cmd/gpustack-operator/... \
		output:rbac:artifacts:config=package/rbac/worker
	$(BIN)/controller-gen rbac:roleName=gpustack-operator-device-manager paths=./devicemanager/... \
		output:rbac:artifacts:config=package/rbac/device-manager
	$(BIN)/controller-gen rbac:roleName=gpustack-operator-cpu-info paths=./cpureporter/... \
		output:rbac:artifacts:config=package/rbac/cpu-info
	$(BIN)/controller-gen rbac:roleName=gpustack-operator-cleanup paths=./internal/uninstall/... \
		output:rbac:artifacts:config=package/rbac/cleanup
	$(BIN)/controller-gen rbac:roleName=gpustack-operator-worker-gateway paths=./internal/gateway/... \
		output:rbac:artifacts:config=package/rbac/worker-gateway

##@ Tools (built once into bin/)

# The demo needs the control plane, the real nodes' kubelet, kube-proxy and images, Kueue and nfd-master; the
# scale harness KWOK as well (its simulated nodes), and the tests the rest.
DEMO_TOOLS := $(STAMP)/kube-$(K8S_VERSION) $(STAMP)/etcd-$(ETCD_VERSION) \
	$(STAMP)/node-$(K8S_VERSION) $(STAMP)/node-images $(BIN)/libnvidia-ml.so.1 $(BIN)/smi-standin \
	$(STAMP)/kueue-$(KUEUE_VERSION) $(STAMP)/nfd-master-$(NFD_VERSION) $(STAMP)/assets
TEST_TOOLS := $(DEMO_TOOLS) $(STAMP)/kwok-$(KWOK_VERSION) $(STAMP)/controller-gen-$(CONTROLLER_GEN_VERSION) $(STAMP)/crossplane-$(CROSSPLANE_VERSION) \
	$(STAMP)/opa-$(OPA_VERSION) $(STAMP)/gator-$(GATEKEEPER_VERSION) $(STAMP)/crank-$(CRANK_VERSION) \
	$(STAMP)/helm-$(HELM_VERSION) $(STAMP)/golangci-lint-$(GOLANGCI_LINT_VERSION) $(STAMP)/crossplane-assets \
	$(STAMP)/upgrade-from-$(KUEUE_PREVIOUS_VERSION)

.PHONY: tools
tools: $(TEST_TOOLS) ## Build every third-party binary the tests and the demo need.

# tool is the rule of one third-party binary: $(1) its name in bin/, $(2) its version, $(3) its wrapper module
# in hack/tools/, $(4) the Go package to build, $(5) the name of a variable holding its -ldflags (may be empty).
# The stamp names the version, so a version bump rebuilds it.
define tool
$(STAMP)/$(1)-$(2): hack/tools/$(3)/go.mod
	$$(call say,building $(1) $(2), or copying it from TOOLS_CACHE (a first build takes minutes; later ones relink from the Go build cache))
	hack/toolcache/toolcache.sh hack/tools/$(3) $(BIN) $(1) -- go build -trimpath -ldflags "$$($(5))" -o $(BIN)/$(1) $(4)
	@mkdir -p $(STAMP) && touch $$@
endef

KUEUE_LDFLAGS := -X sigs.k8s.io/kueue/pkg/version.GitVersion=$(KUEUE_VERSION)
KUEUE_PREVIOUS_LDFLAGS := -X sigs.k8s.io/kueue/pkg/version.GitVersion=$(KUEUE_PREVIOUS_VERSION)
NFD_LDFLAGS := -X sigs.k8s.io/node-feature-discovery/pkg/version.version=$(NFD_VERSION)
# nfd-worker runs in a container that sees the host's /sys, /proc, /etc ... at /host-sys, /host-proc, ...: NFD's
# own image build sets that prefix.
NFD_WORKER_LDFLAGS := $(NFD_LDFLAGS) -X sigs.k8s.io/node-feature-discovery/pkg/utils/hostpath.pathPrefix=/host-
LOCAL_PATH_LDFLAGS := -X main.VERSION=$(LOCAL_PATH_VERSION)
CROSSPLANE_LDFLAGS := -X github.com/crossplane/crossplane-runtime/v2/pkg/version.version=$(CROSSPLANE_VERSION)

$(eval $(call tool,etcd,$(ETCD_VERSION),etcd,go.etcd.io/etcd/server/v3))
$(eval $(call tool,kwok,$(KWOK_VERSION),kwok,sigs.k8s.io/kwok/cmd/kwok))
$(eval $(call tool,kueue,$(KUEUE_VERSION),kueue,sigs.k8s.io/kueue/cmd/kueue,KUEUE_LDFLAGS))
$(eval $(call tool,kueue-previous,$(KUEUE_PREVIOUS_VERSION),kueue-previous,sigs.k8s.io/kueue/cmd/kueue,KUEUE_PREVIOUS_LDFLAGS))
$(eval $(call tool,nfd-master,$(NFD_VERSION),nfd,sigs.k8s.io/node-feature-discovery/cmd/nfd-master,NFD_LDFLAGS))
$(eval $(call tool,nfd-worker,$(NFD_VERSION),nfd,sigs.k8s.io/node-feature-discovery/cmd/nfd-worker,NFD_WORKER_LDFLAGS))
$(eval $(call tool,nfd-gc,$(NFD_VERSION),nfd,sigs.k8s.io/node-feature-discovery/cmd/nfd-gc,NFD_LDFLAGS))
$(eval $(call tool,local-path-provisioner,$(LOCAL_PATH_VERSION),localpath,github.com/rancher/local-path-provisioner,LOCAL_PATH_LDFLAGS))
$(eval $(call tool,controller-gen,$(CONTROLLER_GEN_VERSION),controller-gen,sigs.k8s.io/controller-tools/cmd/controller-gen))
$(eval $(call tool,crossplane,$(CROSSPLANE_VERSION),crossplane,github.com/crossplane/crossplane/v2/cmd/crossplane,CROSSPLANE_LDFLAGS))
$(eval $(call tool,crank,$(CRANK_VERSION),crank,github.com/crossplane/crossplane/v2/cmd/crank))
$(eval $(call tool,helm,$(HELM_VERSION),helm,helm.sh/helm/v3/cmd/helm))
$(eval $(call tool,opa,$(OPA_VERSION),opa,github.com/open-policy-agent/opa))
$(eval $(call tool,gator,$(GATEKEEPER_VERSION),gator,github.com/open-policy-agent/gatekeeper/v3/cmd/gator))
$(eval $(call tool,golangci-lint,$(GOLANGCI_LINT_VERSION),golangci-lint,github.com/golangci/golangci-lint/v2/cmd/golangci-lint))

# The three control-plane binaries come from one wrapper module, in one go build: the packages they share
# compile once and the links run side by side (as the node's two below).
$(STAMP)/kube-$(K8S_VERSION): hack/tools/k8s/go.mod
	$(call say,building kube-apiserver kube-controller-manager kube-scheduler $(K8S_VERSION), or copying them from TOOLS_CACHE (a first build takes about 10 minutes))
	hack/toolcache/toolcache.sh hack/tools/k8s $(BIN) kube-apiserver kube-controller-manager kube-scheduler -- \
		go build -trimpath -ldflags "$(K8S_LDFLAGS)" -o $(BIN)/ $(addprefix k8s.io/kubernetes/cmd/,kube-apiserver kube-controller-manager kube-scheduler)
	@mkdir -p $(STAMP) && touch $@

# A real node's kubelet and kube-proxy come from the same wrapper module.
$(STAMP)/node-$(K8S_VERSION): hack/tools/k8s/go.mod
	$(call say,building kubelet kube-proxy $(K8S_VERSION), or copying them from TOOLS_CACHE (a first build takes minutes))
	hack/toolcache/toolcache.sh hack/tools/k8s $(BIN) kubelet kube-proxy -- \
		go build -trimpath -ldflags "$(K8S_LDFLAGS)" -o $(BIN)/ k8s.io/kubernetes/cmd/kubelet k8s.io/kubernetes/cmd/kube-proxy
	@mkdir -p $(STAMP) && touch $@

# The images every real node holds before anything is pulled (there is no registry): Kubernetes' own pause.c
# from the pinned module, compiled static; a busybox user image from Debian's static busybox; Kueue's and NFD's
# images from the binaries built here, under the names their charts pull; the walkthrough's user image, the SSH
# sidecar and the stand-in enforcers (hack/nodeimages says what each holds).
NODE_IMAGE_BINS := $(STAMP)/kueue-$(KUEUE_VERSION) $(STAMP)/nfd-master-$(NFD_VERSION) $(STAMP)/nfd-worker-$(NFD_VERSION) \
	$(STAMP)/nfd-gc-$(NFD_VERSION) $(STAMP)/local-path-provisioner-$(LOCAL_PATH_VERSION)
$(STAMP)/node-images: hack/tools/k8s/go.mod hack/nodeimages/main.go hack/ociimage/image.go devicemanager/deviceplugin/runtime.go $(NODE_IMAGE_BINS) \
		$(BIN)/enforcer-standin.so $(BIN)/gpustack-ssh-server | host-packages
	$(call say,building the real nodes' images into $(BIN)/images)
	k8s=$(call moddir,k8s,k8s.io/kubernetes); mkdir -p $(BIN) && \
	gcc -Os -Wall -Werror -static -DVERSION=v3.10.1 -o $(BIN)/pause $$k8s/build/pause/linux/pause.c
	go run ./hack/nodeimages --out $(BIN)/images --bin $(BIN) --busybox /bin/busybox \
		--kueue-version $(KUEUE_VERSION) --nfd-version $(NFD_VERSION) --local-path-version $(LOCAL_PATH_VERSION)
	@mkdir -p $(STAMP) && touch $@

# What test/helm's upgrade starts the cluster's own Kueue on: the previous Kueue's image (from its binary, as
# the node images are built) and its chart as it is in its module, into bin/upgrade-from; the test's nodes
# import the image beside bin/images.
$(STAMP)/upgrade-from-$(KUEUE_PREVIOUS_VERSION): $(STAMP)/kueue-previous-$(KUEUE_PREVIOUS_VERSION) hack/nodeimages/main.go hack/ociimage/image.go
	$(call say,building the previous Kueue's image and copying its chart into $(BIN)/upgrade-from)
	rm -rf $(BIN)/upgrade-from && mkdir -p $(BIN)/upgrade-from
	go run ./hack/nodeimages --out $(BIN)/upgrade-from --kueue-only $(BIN)/kueue-previous --kueue-version $(KUEUE_PREVIOUS_VERSION)
	kueue=$(call moddir,kueue-previous,sigs.k8s.io/kueue); cp -R $$kueue/charts/kueue $(BIN)/upgrade-from/kueue; \
	chmod -R u+w $(BIN)/upgrade-from
	@mkdir -p $(STAMP) && touch $@

# The SSH sidecar's program, static: its image has no Go runtime's libraries to offer.
$(BIN)/gpustack-ssh-server: $(shell find cmd/gpustack-ssh-server sshsidecar -name '*.go' ! -name '*_test.go')
	@mkdir -p $(BIN)
	CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o $@ ./cmd/gpustack-ssh-server

# The stand-in soft-slicing enforcer (HAMi-core's libvgpu.so and its kin) of the real nodes' enforcer image.
$(BIN)/enforcer-standin.so: hack/enforcer-standin/enforcer.c
	@mkdir -p $(BIN)
	gcc -shared -fPIC -O2 -Wall -Werror -o $@ $<

# The simulated NVIDIA driver of the real nodes: a stand-in NVML library that answers from a fixture beside it.
$(BIN)/libnvidia-ml.so.1: hack/nvml-standin/libnvidia-ml.c
	@mkdir -p $(BIN)
	gcc -shared -fPIC -O2 -Wall -Werror -Wno-format-truncation -o $@ $<

# The simulated vendor tools of the real nodes (rocm-smi, npu-smi, ...): one static program that answers from a
# fixture beside it, run by the agent in the node's root.
$(BIN)/smi-standin: hack/smi-standin/main.go
	@mkdir -p $(BIN)
	CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o $@ ./hack/smi-standin

.PHONY: gpu-check-bundle
gpu-check-bundle: ## The operator binary, stripped and compressed into bin/gpu-check, for hack/gpu-check.sh on a machine without Go modules.
	@mkdir -p $(BIN)/gpu-check
	go build -trimpath -ldflags "-s -w" -o $(BIN)/gpu-check/gpustack-operator ./cmd/gpustack-operator
	gzip -9f $(BIN)/gpu-check/gpustack-operator
	@ls -l $(BIN)/gpu-check

.PHONY: host-packages
host-packages: ## Install the Debian packages real nodes run on (containerd, runc, CNI plugins, iptables, busybox); needs root.
	hack/host-packages.sh

# Assets copied out of the pinned modules: Kueue's CRDs and webhook manifests, NFD's CRDs and KWOK's stages for
# the demo, and Crossplane's CRDs for the package tests. They are read from the module cache rather than
# committed, so they always match the binaries; moddir downloads a module first, since a machine that never
# built it has no copy.
moddir = $$(cd hack/tools/$(1) && go mod download $(2) && go list -m -f '{{.Dir}}' $(2))
$(STAMP)/assets: hack/tools/kueue/go.mod hack/tools/nfd/go.mod hack/tools/kwok/go.mod
	$(call say,collecting CRDs and KWOK stages from the module cache)
	rm -rf $(ASSETS)/kueue-crds $(ASSETS)/kwok-stages && mkdir -p $(ASSETS)/kueue-crds $(ASSETS)/kwok-stages
	kueue=$(call moddir,kueue,sigs.k8s.io/kueue); nfd=$(call moddir,nfd,sigs.k8s.io/node-feature-discovery); \
	kwok=$(call moddir,kwok,sigs.k8s.io/kwok); \
	cp $$kueue/config/components/crd/bases/*.yaml $(ASSETS)/kueue-crds/; \
	cp $$kueue/config/components/webhook/manifests.yaml $(ASSETS)/kueue-webhooks.yaml; \
	cp $$nfd/deployment/base/nfd-crds/nfd-api-crds.yaml $(ASSETS)/nfd-crds.yaml; \
	for s in node/fast/node-initialize node/heartbeat-with-lease/node-heartbeat-with-lease \
		pod/fast/pod-ready pod/fast/pod-complete pod/fast/pod-delete; do \
		cp $$kwok/kustomize/stage/$$s.yaml $(ASSETS)/kwok-stages/; done; \
	chmod -R u+w $(ASSETS)
	@mkdir -p $(STAMP) && touch $@

$(STAMP)/crossplane-assets: hack/tools/crossplane/go.mod
	$(call say,collecting Crossplane's CRDs from the module cache)
	rm -rf $(ASSETS)/crossplane-crds && mkdir -p $(ASSETS)/crossplane-crds
	crossplane=$(call moddir,crossplane,github.com/crossplane/crossplane/v2); \
	cp $$crossplane/cluster/crds/*.yaml $(ASSETS)/crossplane-crds/; chmod -R u+w $(ASSETS)/crossplane-crds
	@mkdir -p $(STAMP) && touch $@

# The chart's subcharts, Kueue's and NFD's, copied as they are from the pinned modules into the chart's
# git-ignored charts/, so they always match the binaries built here.
CHART := package/helm/gpustack-operator
CHART_DEPS := $(CHART)/charts/kueue/Chart.yaml
$(CHART_DEPS): hack/tools/kueue/go.mod hack/tools/nfd/go.mod Makefile
	$(call say,copying Kueue's and NFD's charts from the module cache into $(CHART)/charts)
	rm -rf $(CHART)/charts && mkdir -p $(CHART)/charts
	kueue=$(call moddir,kueue,sigs.k8s.io/kueue); nfd=$(call moddir,nfd,sigs.k8s.io/node-feature-discovery); \
	cp -R $$kueue/charts/kueue $(CHART)/charts/kueue; \
	cp -R $$nfd/deployment/helm/node-feature-discovery $(CHART)/charts/node-feature-discovery; \
	chmod -R u+w $(CHART)/charts
	@# Kueue's chart renders its CRDs as templates, which helm uninstall would delete with every team's queues and
	@# Workloads: they are kept (helm.sh/resource-policy), and a later install of the same release adopts them.
	sed -i 's|^  annotations:$$|  annotations:\n    helm.sh/resource-policy: keep|' $(CHART)/charts/kueue/templates/crd/*.yaml
	@n=$$(grep -l 'helm.sh/resource-policy: keep' $(CHART)/charts/kueue/templates/crd/*.yaml | wc -l); \
	m=$$(ls $(CHART)/charts/kueue/templates/crd/*.yaml | wc -l); \
	if [ "$$n" != "$$m" ]; then echo "kept $$n of Kueue's $$m CRD templates" >&2; exit 1; fi
	touch $@

.PHONY: chart
chart: $(CHART_DEPS) $(STAMP)/helm-$(HELM_VERSION) ## Package the Helm chart, Kueue's and NFD's charts inside, into _output/package.
	$(BIN)/helm package $(CHART) --version $(VERSION:v%=%) --app-version $(VERSION) --destination $(OUTPUT)/package >/dev/null
	$(call say,$(OUTPUT)/package/gpustack-operator-$(VERSION:v%=%).tgz)

##@ Verify

.PHONY: verify
verify: verify-fmt verify-vet verify-lint verify-generate verify-size verify-docs ## Check format, vet, lint, that generated files are current, no tracked file is large and the docs cite only what the repository holds.

.PHONY: verify-size
verify-size: ## No tracked file is over 1 MB but the test data hack/large-files.txt names: build outputs never go into git.
	@big=$$(git ls-files -z | xargs -0 -r stat -c '%s %n' 2>/dev/null | awk '$$1 > 1048576 { sub(/^[0-9]+ /, ""); print }' | \
		grep -vxF -f hack/large-files.txt || true); \
	if [ -n "$$big" ]; then echo "tracked files over 1 MB (build outputs never go into git; name test data in hack/large-files.txt):" >&2; \
		echo "$$big" >&2; exit 1; fi

.PHONY: verify-fmt
verify-fmt: ## gofmt: no file needs formatting.
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt -w these files:" >&2; echo "$$out" >&2; exit 1; fi

.PHONY: verify-vet
verify-vet: ## go vet on every package.
	go vet ./...

.PHONY: verify-lint
verify-lint: $(STAMP)/golangci-lint-$(GOLANGCI_LINT_VERSION) ## golangci-lint with .golangci.yml (depguard keeps the layers).
	$(BIN)/golangci-lint run ./...

.PHONY: verify-docs
verify-docs: ## No link, "Step N" or document cited in the tracked files is missing from the repository.
	go run ./hack/doccheck

.PHONY: verify-generate
GENERATED := apis package/crds package/rbac $(CHART)/values.yaml $(CHART)/templates/_systemnamespaces.tpl policies/cel policies/rego/lib \
	policies/gatekeeper examples/gitops/argocd-cm.yaml
verify-generate: $(STAMP)/controller-gen-$(CONTROLLER_GEN_VERSION) ## make generate leaves no diff.
	@state() { git status --porcelain -- $(GENERATED); git diff -- $(GENERATED); }; before=$$(state | sha256sum); \
	$(MAKE) --no-print-directory generate >/dev/null; \
	if [ "$$(state | sha256sum)" != "$$before" ]; then \
		echo "make generate changed files under $(GENERATED); run it and commit the result:" >&2; \
		git status --porcelain -- $(GENERATED) >&2; exit 1; fi

##@ Test

# The tiers, cheapest first. test-unit needs no binary (the tests that do skip, saying why); test-integration
# runs the packages whose tests start envtest's API server or the policy tools; test-e2e and test-packages start
# local clusters of their own, so they run one package at a time, never two clusters at once on two cores.
INTEGRATION_PKGS := ./apis/... ./devicemanager/... ./internal/... ./policies/... ./test/framework/... ./test/rbac/...
TEST_ENV := GPUSTACK_BIN=$(BIN) KUBEBUILDER_ASSETS=$(BIN)

.PHONY: test
test: verify test-unit test-integration test-e2e test-packages ## Run every tier: verify, unit, integration, end-to-end, packages.

.PHONY: test-unit
test-unit: ## Unit tests with the race detector; no control plane.
	env -u GPUSTACK_BIN go test -race -count=1 $$(go list ./... | grep -v $(addprefix -e ,$(SUITE_PKGS)))

# The suites that only run with the binaries built (end-to-end, Helm, packages), in their own tiers: the unit
# tier does not link them with the race detector only to see them skip.
SUITE_PKGS := /test/e2e /test/helm$$ /test/packages$$

.PHONY: test-integration
test-integration: $(TEST_TOOLS) $(CHART_DEPS) build ## Tests on envtest's API server, and the policies through OPA, gator and a real API server.
	$(TEST_ENV) go test -count=1 -timeout 20m $(INTEGRATION_PKGS)

.PHONY: test-e2e
test-e2e: $(DEMO_TOOLS) $(STAMP)/helm-$(HELM_VERSION) $(CHART_DEPS) build operator-image ## The walkthrough, the chain, its faults and HA, partitions, the nine vendors through the device plugins and the worker-gateway across three clusters, on real nodes with the chart.
	$(TEST_ENV) GPUSTACK_OPERATOR_IMAGE=$(OUTPUT)/package/images/gpustack-operator.tar go test -p 1 -count=1 -timeout 40m ./test/e2e/... -ginkgo.json-report=ginkgo-report.json

.PHONY: test-packages
test-packages: $(TEST_TOOLS) $(CHART_DEPS) build package ## The Helm chart's upgrade and uninstall on real nodes, the Crossplane packages on a local cluster; the Crossplane render.
	$(TEST_ENV) PACKAGE_DIR=$(OUTPUT)/package GPUSTACK_OPERATOR_IMAGE=$(OUTPUT)/package/images/gpustack-operator.tar go test -p 1 -count=1 -timeout 20m ./test/helm/ ./test/packages/
	cd hack/tools/crossplane && GPUSTACK_BIN=$(BIN) go test -count=1 -timeout 10m ./...

.PHONY: bench
bench: ## Run the benchmarks (numbers in docs/performance.md).
	go test -run '^$$' -bench . -benchtime 20x ./internal/embedded/
	go test -run '^$$' -bench . -benchtime 100x ./internal/controller/cardcheck/
	go test -run '^$$' -bench . -benchtime 40x ./internal/gateway/

# The scale harness's named configuration (test/performance/configs: small, medium, large), and, to run another
# size without its thresholds, the size and how long it counts writes on a quiet cluster.
CONFIG ?= large
NODES ?=
WORKLOADS ?=
QUIET ?=
BENCH_DIR ?= $(ROOT)/.bench-cluster

.PHONY: bench-cluster
bench-cluster: $(DEMO_TOOLS) $(STAMP)/kwok-$(KWOK_VERSION) $(STAMP)/helm-$(HELM_VERSION) $(CHART_DEPS) operator-image ## Measure the operator, installed by the chart, on a local cluster of one real node and KWOK nodes (8 cards each) at the size of CONFIG (or NODES, WORKLOADS, QUIET); fails when a threshold of CONFIG is crossed; redraws docs/bench/cluster.png.
	go build -o $(BIN)/ ./cmd/gpustack-operator ./hack/localcluster
	go build -o $(BIN)/benchcluster ./test/performance/cluster
	$(BIN)/benchcluster --config test/performance/configs/$(CONFIG).yaml $(if $(NODES),--nodes $(NODES)) \
		$(if $(WORKLOADS),--workloads $(WORKLOADS)) $(if $(QUIET),--quiet $(QUIET)) --bin $(BIN) --dir $(BENCH_DIR) \
		--chart $(CHART) --image $(OUTPUT)/package/images/gpustack-operator.tar --results docs/bench/cluster-results.json \
		|| status=$$?; cd hack/tools/benchplot && go run . --in $(ROOT)/docs/bench/cluster-results.json --out $(ROOT)/docs/bench/cluster.png && exit $${status:-0}

##@ Demo

DEMO_DIR ?= $(ROOT)/.demo
INVENTORY ?= examples/clusters/walkthrough.yaml
INVENTORIES ?= examples/clusters/walkthrough.yaml,examples/clusters/h100-mig.yaml
# The demo's nodes are real nodes (a kubelet with containerd each; root, and make host-packages, which the
# node images' build calls): the chart's Pods and the Instances run in real containers. Their simulated
# hardware is the PCI bus, the NVIDIA driver (MIG included) and the other vendors' tools.

.PHONY: demo
demo: ## Start a bare local cluster with the walkthrough's nodes (or INVENTORY=FILE) and helm install the chart on it, in the background.
	$(call say,demo step 1 of 3: the control plane, the real nodes' tools and helm (built on the first run only), and the chart's subcharts)
	@$(MAKE) --no-print-directory $(DEMO_TOOLS) $(STAMP)/helm-$(HELM_VERSION) $(CHART_DEPS)
	$(call say,demo step 2 of 3: building localcluster)
	go build -o $(BIN)/ ./hack/localcluster
	$(call say,demo step 2b: the operator's image)
	@$(MAKE) --no-print-directory operator-image
	$(call say,demo step 3 of 3: starting the local cluster and installing the chart (helm install))
	$(BIN)/localcluster up --bin $(BIN) --dir $(DEMO_DIR) --inventory $(INVENTORY) --chart $(CHART) \
		--real-nodes --images $(OUTPUT)/package/images/gpustack-operator.tar

.PHONY: demo-multi
demo-multi: ## Start one member cluster per inventory (INVENTORIES=a.yaml,b.yaml) and a manager running the worker-gateway, each on real nodes with the chart.
	$(call say,demo-multi step 1 of 3: the control plane, the real nodes' tools and helm (built on the first run only), and the chart's subcharts)
	@$(MAKE) --no-print-directory $(DEMO_TOOLS) $(STAMP)/helm-$(HELM_VERSION) $(CHART_DEPS)
	$(call say,demo-multi step 2 of 3: building localcluster and the operator's image)
	go build -o $(BIN)/ ./hack/localcluster
	@$(MAKE) --no-print-directory operator-image
	$(call say,demo-multi step 3 of 3: starting the member clusters and the manager, each with helm install of the chart)
	$(BIN)/localcluster up-multi --bin $(BIN) --dir $(DEMO_DIR) --inventories $(INVENTORIES) --chart $(CHART) \
		--images $(OUTPUT)/package/images/gpustack-operator.tar

.PHONY: demo-down
demo-down: ## Stop the local clusters started by make demo or make demo-multi; leaves no process behind.
	@if [ -x $(BIN)/localcluster ]; then $(BIN)/localcluster down --dir $(DEMO_DIR); \
	else go run ./hack/localcluster down --dir $(DEMO_DIR); fi

.PHONY: help
help: ## Show the targets.
	@awk 'BEGIN {FS = ":.*##"} /^[a-zA-Z_-]+:.*?##/ { printf "  %-12s %s\n", $$1, $$2 }' $(MAKEFILE_LIST)
