package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/yaml"

	"github.com/gpustack/gpustack-operator/apis/scheme"
	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
	"github.com/gpustack/gpustack-operator/devicemanager"
	"github.com/gpustack/gpustack-operator/devicemanager/deviceplugin"
	"github.com/gpustack/gpustack-operator/devicemanager/dra"
	"github.com/gpustack/gpustack-operator/providers"
	"github.com/gpustack/gpustack-operator/providers/hardware"
	"github.com/gpustack/gpustack-operator/providers/pcisysfs"
	"github.com/gpustack/gpustack-operator/providers/rdma"
	"github.com/gpustack/gpustack-operator/providers/simulated"
	"github.com/gpustack/gpustack-operator/providers/smitool"
)

// runDeviceManager runs the device manager on this node's hardware. With --simulate-inventory it stands in for the agents of every node
// of an inventory file (or of --node only), reporting their simulated cards through the same publishing code
// a real agent uses.
func runDeviceManager(args []string) error {
	fs := flag.NewFlagSet("device-manager", flag.ExitOnError)
	kubeconfig := fs.String("kubeconfig", "", "kubeconfig; in-cluster configuration when empty")
	inventoryFile := fs.String("simulate-inventory", "", "report the cards of this inventory file's nodes instead of real hardware")
	node := fs.String("node", "", "the node to report for; with --simulate-inventory, empty means every node of the file")
	interval := fs.Duration("interval", 30*time.Second, "how often to detect again")
	pluginDir := fs.String("device-plugin-dir", pluginapi.DevicePluginPath, "the kubelet's device-plugin directory; empty serves no device plugin (simulated nodes never serve one)")
	draRegistrar := fs.String("dra-registrar-dir", kubeletplugin.KubeletRegistryDir, "the kubelet's plugin registration directory, where the DRA drivers register; empty publishes nothing to DRA")
	draPlugins := fs.String("dra-plugin-dir", kubeletplugin.KubeletPluginsDir, "where each DRA driver makes its directory with the socket the kubelet calls")
	cdiDir := fs.String("cdi-dir", dra.DefaultCDIDir, "where the DRA drivers write a prepared claim's CDI spec, for the node's container runtime (CDI on) to read")
	metricsAddr := fs.String("metrics-bind-address", "0", "address of the Prometheus metrics endpoint (the cards by health); 0 turns it off")
	nodeTokens := fs.String("simulate-node-tokens", "", "with --simulate-inventory, a directory holding one token per node (a file named after it), bound to that node as a real agent's Pod token is: each node's inventory is written with its own")
	printOnly := fs.Bool("print", false, "detect once with the hardware backends and print the labels and the Devices spec that would be published, without a cluster")
	_ = fs.Parse(args)
	ctrl.SetLogger(zap.New())
	logger := ctrl.Log.WithName("device-manager")

	// The node's variables, read once at start: a value the agent cannot read stops it, naming the variable.
	classes, err := pcisysfs.ClassPrefixesFromEnv(os.Getenv)
	if err != nil {
		return err
	}
	data, err := deviceplugin.DataDirFromEnv(os.Getenv)
	if err != nil {
		return err
	}
	hw := hardware.Options{ClassPrefixes: classes, Runner: smitool.ExecRunner{Root: devicemanager.HostRoot, Scratch: devicemanager.ToolScratch(data)}}
	if *printOnly {
		return printDetected(*node, hardware.Options{ClassPrefixes: classes})
	}
	agents, err := deviceManagers(*inventoryFile, *node, hw)
	if err != nil {
		return err
	}
	cfg, c, err := newClient(*kubeconfig)
	if err != nil {
		return err
	}
	ctx := ctrl.SetupSignalHandler()
	if *inventoryFile == "" {
		// One real node: detect, publish and serve the kubelet device plugin.
		runtime := deviceplugin.RuntimeIn(data)
		if runtime.CDI, err = deviceplugin.Injection(os.Getenv, devicemanager.HostRoot); err != nil {
			return err
		}
		sliceGate, err := deviceplugin.SlicedAllocateGate(os.Getenv)
		if err != nil {
			return err
		}
		byKubelet, err := deviceplugin.IdentifyByKubelet(os.Getenv)
		if err != nil {
			return err
		}
		podResources := ""
		if byKubelet {
			podResources = deviceplugin.PodResourcesSocket
		}
		for name, p := range agents {
			drivers, err := draDrivers(cfg, name, *draRegistrar, *draPlugins, *cdiDir, logger)
			if err != nil {
				return err
			}
			own, err := devicemanager.OwnReads(ctx, cfg, scheme.New(), name)
			if err != nil {
				return err
			}
			a := &devicemanager.Agent{Node: name, Provider: p, Client: own, Interval: *interval, PluginDir: *pluginDir,
				Runtime: runtime, Log: logger, NoSlicedAllocateGate: !sliceGate, PodResources: podResources,
				ExcludedDevices: devicemanager.ExcludedDevicesPath(os.Getenv, devicemanager.HostRoot), RDMA: func() ([]rdma.Device, error) { return rdma.Scan(pcisysfs.DefaultRoot) },
				DRA: drivers}
			if drivers != nil {
				// A claim's cards reach its containers as a device plugin's would, and the ledger keeps the two apart.
				drivers.Edits, drivers.Ledger = runtime.WholeCards, a.Ledger
			}
			if hw, ok := p.(*hardware.Provider); ok {
				a.Partitioners = map[string]deviceplugin.Partitioner{"nvidia": hw.MIG()}
			}
			if err := serveMetrics(ctx, *metricsAddr, logger, a.Ready); err != nil {
				return err
			}
			return a.Run(ctx)
		}
	}
	publishers, err := nodePublishers(cfg, c, *nodeTokens, agents)
	if err != nil {
		return err
	}
	var rounds atomic.Int64
	ready := func() error {
		if rounds.Load() == 0 {
			return errors.New("the simulated nodes are not published yet")
		}
		return nil
	}
	if err := serveMetrics(ctx, *metricsAddr, logger, ready); err != nil {
		return err
	}
	for {
		for name, p := range agents {
			if err := publishOnce(ctx, publishers[name], name, p); err != nil {
				logger.Error(err, "cannot publish", "node", name)
			}
		}
		rounds.Add(1)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(*interval):
		}
	}
}

// draDrivers returns the node's DRA drivers, or none where GPUSTACK_DRA_PUBLISH is false, no registration
// directory is given, or the cluster serves no DRA (said in the log).
func draDrivers(cfg *rest.Config, node, registrar, plugins, cdiDir string, log logr.Logger) (*dra.Drivers, error) {
	publish, err := dra.Publishing(os.Getenv)
	if err != nil || !publish || registrar == "" {
		return nil, err
	}
	clientset, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, errors.Wrap(err, "cannot make the DRA drivers' client")
	}
	served, err := dra.Served(clientset.Discovery())
	if err != nil {
		return nil, err
	}
	if !served {
		log.Info("the cluster serves no resource.k8s.io/v1 ResourceSlices; the cards are not published to DRA", "node", node)
		return nil, nil
	}
	return &dra.Drivers{Node: node, Client: clientset, RegistrarDir: registrar, PluginDir: plugins, CDIDir: cdiDir, Log: log.WithName("dra")}, nil
}

// nodePublishers returns the publisher of each simulated node: one client for all, or, with a token
// directory, one per node that sends that node's token (the clients share c's mapping of kinds to resources,
// so thousands of nodes cost one discovery).
func nodePublishers(cfg *rest.Config, c client.Client, tokens string, agents map[string]providers.Provider) (map[string]*devicemanager.Publisher, error) {
	out := map[string]*devicemanager.Publisher{}
	for name := range agents {
		out[name] = &devicemanager.Publisher{Client: c}
		if tokens == "" {
			continue
		}
		nodeCfg := rest.AnonymousClientConfig(cfg)
		nodeCfg.BearerTokenFile = filepath.Join(tokens, name)
		nc, err := client.New(nodeCfg, client.Options{Scheme: c.Scheme(), Mapper: c.RESTMapper()})
		if err != nil {
			return nil, errors.Wrapf(err, "cannot create the client of node %s", name)
		}
		out[name].Client = nc
	}
	return out, nil
}

// deviceManagers returns the provider of each node this process reports for: the simulated cards of an
// inventory file's nodes, or this node's hardware read as hw says (--node, else NODE_NAME, which the DaemonSet
// sets).
func deviceManagers(inventoryFile, node string, hw hardware.Options) (map[string]providers.Provider, error) {
	if inventoryFile == "" {
		if node == "" {
			node = os.Getenv("NODE_NAME")
		}
		if node == "" {
			return nil, errors.New("cannot tell which node this is: pass --node or set NODE_NAME")
		}
		return map[string]providers.Provider{node: hardware.New(hw)}, nil
	}
	inv, err := simulated.Load(inventoryFile)
	if err != nil {
		return nil, err
	}
	agents := map[string]providers.Provider{}
	for _, n := range inv.Nodes {
		if node == "" || n.Name == node {
			agents[n.Name] = simulated.New(n)
		}
	}
	if len(agents) == 0 {
		return nil, errors.Errorf("node %q is not in %s", node, inventoryFile)
	}
	return agents, nil
}

// publishOnce detects and publishes. Cards a backend could only partly read come back unhealthy with an
// error; they are published all the same, so the ledger shows them, and the error is returned for the log.
func publishOnce(ctx context.Context, pub *devicemanager.Publisher, node string, p providers.Provider) error {
	devices, detectErr := p.Detect(ctx)
	if detectErr != nil && len(devices) == 0 {
		return errors.Wrapf(detectErr, "cannot detect the cards of node %s", node)
	}
	var nics []rdma.Device
	if s, ok := p.(*simulated.Provider); ok {
		nics = s.RDMA()
	}
	if err := pub.Publish(ctx, node, devices, nics); err != nil {
		return err
	}
	return errors.Wrapf(detectErr, "some cards of node %s are unhealthy", node)
}

// printDetected runs the hardware backends on this machine, as hw says, and prints what the agent would publish.
func printDetected(node string, hw hardware.Options) error {
	if node == "" {
		node, _ = os.Hostname()
	}
	devices, err := hardware.New(hw).Detect(context.Background())
	if err != nil {
		fmt.Fprintln(os.Stderr, "warning:", err)
	}
	out, err := yaml.Marshal(map[string]any{
		"nodeFeature": map[string]any{"name": workerv1.NodeFeatureName(node, workerv1.NodeFeatureDeviceManager), "labels": providers.NodeLabels(devices)},
		"devices":     map[string]any{"name": node, "spec": providers.DevicesSpec(devices)},
	})
	if err != nil {
		return err
	}
	_, err = os.Stdout.Write(out)
	return err
}

// serveMetrics serves the agent's metrics and its health (/healthz) and readiness (/readyz, from ready) on addr
// until ctx ends; "0" or "" serves none.
func serveMetrics(ctx context.Context, addr string, logger logr.Logger, ready func() error) error {
	if addr == "" || addr == "0" {
		return nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return errors.Wrap(err, "cannot listen for metrics")
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(devicemanager.Registry, promhttp.HandlerOpts{}))
	// The DaemonSet's probes: alive while the process answers; ready once the cards are published and every
	// device plugin is registered with the kubelet (again, after the kubelet restarted).
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) })
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if err := ready(); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ok"))
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logger.Error(err, "metrics server stopped")
		}
	}()
	return nil
}
