package packages

import (
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/gpustack/gpustack-operator/providers/simulated"
	"github.com/gpustack/gpustack-operator/test/framework/localcluster"
	"github.com/gpustack/gpustack-operator/test/framework/testenv"
)

// TestCrossplaneInstall installs the packages with a real Crossplane core (v2.4.0, built from the module
// proxy) on a local cluster: a loopback OCI registry in the test serves the three xpkgs, an ImageConfig
// rewrites docker.io/gpustack to it, and the Configuration is installed by its published name. Crossplane
// must pull it, resolve both Function dependencies, run their embedded runtimes as Deployments (KWOK runs the
// Pods) and establish the two XRDs; every package reports Installed and Healthy.
func TestCrossplaneInstall(t *testing.T) {
	d := dir(t)
	bin, skip, err := testenv.BinDir("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok", "crossplane")
	if err != nil {
		t.Fatal(err)
	}
	if skip != "" {
		t.Skip(skip)
	}
	ctrllog.SetLogger(logr.Discard())
	inv, err := simulated.Load(testenv.Path("examples", "clusters", "walkthrough.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	run := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cluster, err := localcluster.Start(ctx, localcluster.Config{BinDir: bin, Dir: run, Inventory: inv})
	if err != nil {
		t.Fatalf("cannot start the local cluster: %v", err)
	}
	t.Cleanup(func() { _ = cluster.Stop() })

	registryHost := serveRegistry(t)
	for _, pkg := range []string{"gpustack-function-flavors", "gpustack-function-instancetype", "gpustack-operator-configuration"} {
		img, err := tarball.ImageFromPath(filepath.Join(d, pkg+"-"+version+".xpkg"), nil)
		if err != nil {
			t.Fatal(err)
		}
		ref, err := name.NewTag(registryHost + "/gpustack/" + pkg + ":" + version)
		if err != nil {
			t.Fatal(err)
		}
		if err := remote.Write(ref, img); err != nil {
			t.Fatalf("cannot push %s: %v", ref, err)
		}
	}

	kubectl := func(args ...string) (string, error) { return testenv.Kubectl(cluster.Kubeconfig, args...) }
	crossplane := func(args ...string) *exec.Cmd {
		cmd := exec.Command(filepath.Join(bin, "crossplane"), args...)
		cmd.Env = append(os.Environ(), "KUBECONFIG="+cluster.Kubeconfig, "POD_NAMESPACE=crossplane-system")
		return cmd
	}
	if _, err := kubectl("create", "namespace", "crossplane-system"); err != nil {
		t.Fatal(err)
	}
	if _, err := kubectl("-n", "crossplane-system", "create", "serviceaccount", "crossplane"); err != nil {
		t.Fatal(err)
	}
	// What the chart's init container does: CRDs, the lock, and the CA, server and client key pairs.
	secrets := []string{"--tlsca-secret-name=crossplane-root-ca", "--tls-server-secret-name=crossplane-tls-server",
		"--tls-client-secret-name=crossplane-tls-client"}
	webhooks := filepath.Join(run, "no-webhooks")
	if err := os.MkdirAll(webhooks, 0o755); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, time.Minute, func() (bool, string) {
		// The first run may apply the lock before its freshly created CRD is served; init is idempotent.
		out, err := crossplane(append([]string{"core", "init", "--cr-ds-path=" + filepath.Join(bin, "assets", "crossplane-crds"),
			"--webhook-configurations-path=" + webhooks}, secrets...)...).CombinedOutput()
		return err == nil, fmt.Sprintf("crossplane core init: %v\n%s", err, testenv.LastLines(string(out), 1))
	})
	// What the Pod mounts: the key pairs, from their Secrets.
	certs := filepath.Join(run, "tls")
	for _, kind := range []string{"server", "client"} {
		for _, key := range []string{"tls.crt", "tls.key", "ca.crt"} {
			out, err := kubectl("-n", "crossplane-system", "get", "secret", "crossplane-tls-"+kind, "-o", "jsonpath={.data."+strings.ReplaceAll(key, ".", `\.`)+"}")
			if err != nil {
				t.Fatal(err)
			}
			data, err := base64.StdEncoding.DecodeString(out)
			if err != nil {
				t.Fatal(err)
			}
			_ = os.MkdirAll(filepath.Join(certs, kind), 0o700)
			if err := os.WriteFile(filepath.Join(certs, kind, key), data, 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	// The package cache, an emptyDir in the Pod.
	if err := os.MkdirAll(filepath.Join(run, "xpkg-cache"), 0o755); err != nil {
		t.Fatal(err)
	}
	core := crossplane("core", "start", "--xpkg-cache-dir="+filepath.Join(run, "xpkg-cache"), "--tls-server-secret-name=crossplane-tls-server",
		"--tls-client-secret-name=crossplane-tls-client", "--tls-server-certs-dir="+filepath.Join(certs, "server"),
		"--tls-client-certs-dir="+filepath.Join(certs, "client"), "--health-probe-port="+testenv.FreePort(t), "--metrics-port="+testenv.FreePort(t))
	coreLog, err := os.Create(filepath.Join(run, "crossplane.log"))
	if err != nil {
		t.Fatal(err)
	}
	core.Stdout, core.Stderr = coreLog, coreLog
	if err := core.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = core.Process.Kill(); _ = core.Wait(); coreLog.Close() })
	defer func() {
		if t.Failed() {
			data, _ := os.ReadFile(coreLog.Name())
			t.Logf("crossplane core:\n%s", testenv.LastLines(string(data), 30))
		}
	}()

	install := fmt.Sprintf(`apiVersion: pkg.crossplane.io/v1beta1
kind: ImageConfig
metadata:
  name: gpustack-loopback-registry
spec:
  matchImages:
    - prefix: docker.io/gpustack
  rewriteImage:
    prefix: %s/gpustack
---
apiVersion: pkg.crossplane.io/v1
kind: Configuration
metadata:
  name: gpustack-operator
spec:
  package: docker.io/gpustack/gpustack-operator-configuration:%s
`, registryHost, version)
	installFile := filepath.Join(run, "install.yaml")
	if err := os.WriteFile(installFile, []byte(install), 0o644); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, time.Minute, func() (bool, string) {
		_, err := kubectl("apply", "-f", installFile)
		return err == nil, fmt.Sprint(err)
	})
	want := "configuration/gpustack-operator True True\n" +
		"function/gpustack-gpustack-function-flavors True True\n" +
		"function/gpustack-gpustack-function-instancetype True True\n" +
		"xrd/xinstancetypepools.pools.gpustack.ai True\n" +
		"xrd/xnodeinventories.pools.gpustack.ai True\n"
	testenv.Eventually(t, 4*time.Minute, func() (bool, string) {
		var got strings.Builder
		for _, q := range []struct{ kind, columns string }{
			{"configuration.pkg.crossplane.io", `{range .items[*]}configuration/{.metadata.name} {.status.conditions[?(@.type=="Installed")].status} {.status.conditions[?(@.type=="Healthy")].status}{"\n"}{end}`},
			{"function.pkg.crossplane.io", `{range .items[*]}function/{.metadata.name} {.status.conditions[?(@.type=="Installed")].status} {.status.conditions[?(@.type=="Healthy")].status}{"\n"}{end}`},
			{"compositeresourcedefinition", `{range .items[*]}xrd/{.metadata.name} {.status.conditions[?(@.type=="Established")].status}{"\n"}{end}`},
		} {
			out, err := kubectl("get", q.kind, "-o", "jsonpath="+q.columns)
			if err != nil {
				return false, err.Error()
			}
			got.WriteString(out)
		}
		if got.String() == want {
			return true, ""
		}
		conditions, _ := kubectl("get", "configuration.pkg,configurationrevision.pkg,function.pkg,functionrevision.pkg", "-o",
			`jsonpath={range .items[*]}{.kind}/{.metadata.name}: {range .status.conditions[*]}{.type}={.status} {.message}; {end}{"\n"}{end}`)
		return false, "want:\n" + want + "got:\n" + got.String() + "conditions:\n" + conditions
	})
}

// serveRegistry serves an in-memory OCI registry on loopback until the test ends and returns its host; the
// registry clients (Crossplane's too) speak plain HTTP to a loopback address.
func serveRegistry(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: registry.New(registry.Logger(log.New(io.Discard, "", 0))), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	return l.Addr().String()
}
