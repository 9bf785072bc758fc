package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	goruntime "runtime"
	"strconv"
	"strings"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	nfdv1alpha1 "sigs.k8s.io/node-feature-discovery/api/nfd/v1alpha1"

	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
	"github.com/gpustack/gpustack-operator/package/rbac"
	"github.com/gpustack/gpustack-operator/providers/simulated"
	"github.com/gpustack/gpustack-operator/test/framework/localcluster"
)

// options are the harness's flags.
type options struct {
	nodes, workloads, flips, policyCreates int
	quiet                                  time.Duration
	bin, dir, chart, image, results        string
}

// pprofPort is where the chart's worker serves its profiles in the harness (worker.pprofPort).
const pprofPort = 6060

// systemNode is the cluster's one real node, a CPU node that runs the chart's system Pods (the worker, Kueue,
// NFD) in real containers, beside the generated KWOK nodes that hold the cards.
func systemNode() *simulated.Inventory {
	return &simulated.Inventory{Nodes: []simulated.Node{{
		Name: "node-system", OS: "linux", Arch: "amd64", CPU: cpus[0],
		Memory: resource.MustParse("128Gi"), Storage: resource.MustParse("500Gi"),
	}}}
}

// serviceAccountUser is the user name a service account's requests carry.
func serviceAccountUser(namespace, component string) string {
	return "system:serviceaccount:" + namespace + ":" + rbac.ServiceAccountName(component)
}

// run starts the cluster, takes every measure in turn and stops the cluster.
func run(ctx context.Context, o options) (*result, error) {
	r := &result{Date: time.Now().UTC().Format("2006-01-02"), Machine: machine(), Nodes: o.nodes, Workloads: o.workloads}
	say := func(format string, args ...any) { fmt.Fprintf(os.Stderr, ">> "+format+"\n", args...) }

	say("starting a local cluster of %d nodes with %d cards", o.nodes, o.nodes*cardsPerNode)
	start := time.Now()
	c, err := localcluster.Start(ctx, localcluster.Config{
		BinDir: o.bin, Dir: o.dir, Inventory: systemNode(), RealNodes: true, NodeCommand: filepath.Join(o.bin, "localcluster"),
		KWOKNodes: generate(o.nodes), KWOKAgent: filepath.Join(o.bin, "gpustack-operator"),
		Chart: o.chart, Images: []string{o.image}, Progress: os.Stderr,
		// No storage: the harness claims no volumes, and the provisioner's Pod could land on a KWOK node.
		ChartValues: []string{"worker.pprofPort=" + strconv.Itoa(pprofPort), "storage.enabled=false"},
		AuditUsers:  []string{serviceAccountUser(localcluster.ChartNamespace, "worker"), serviceAccountUser(workerv1.DeviceManagerNamespace, "device-manager")},
	})
	if err != nil {
		return nil, err
	}
	defer func() { _ = c.Stop() }()
	cfg := *c.RESTConfig
	cfg.QPS, cfg.Burst = 1000, 2000
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, workerv1.AddToScheme, nfdv1alpha1.AddToScheme} {
		if err := add(scheme); err != nil {
			return nil, errors.Wrap(err, "cannot build the scheme")
		}
	}
	k, err := client.NewWithWatch(&cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, errors.Wrap(err, "cannot create a client")
	}
	cs, err := kubernetes.NewForConfig(&cfg)
	if err != nil {
		return nil, errors.Wrap(err, "cannot create a clientset")
	}
	worker, err := leadingWorker(ctx, cs)
	if err != nil {
		return nil, err
	}

	say("waiting for every node's inventory and a settled chain")
	if err := settled(ctx, k, o.nodes); err != nil {
		return nil, err
	}
	r.add("startup", time.Since(start).Seconds(), "s", "")
	first, err := sampleProc(worker.pid)
	if err != nil {
		return nil, err
	}

	say("timing %d flips of gpustack.ai/managed", o.flips)
	var names []string
	for i := range o.nodes {
		names = append(names, fmt.Sprintf("node-%05d", i))
	}
	flips, err := converge(ctx, k, names, o.flips)
	if err != nil {
		return nil, err
	}
	r.add("converge-p50", ms(percentile(flips.total, 50)), "ms", "")
	r.add("converge-p99", ms(percentile(flips.total, 99)), "ms", "< 1500")
	r.add("converge-nfd-p50", ms(percentile(flips.nfd, 50)), "ms", "")
	r.add("converge-ours-p50", ms(percentile(flips.ours, 50)), "ms", "")
	r.add("converge-ours-p99", ms(percentile(flips.ours, 99)), "ms", "< 100")

	pool, err := slicedPool(ctx, k)
	if err != nil {
		return nil, err
	}
	bare, err := probePod(ctx, k, pool)
	if err != nil {
		return nil, err
	}
	say("timing %d dry-run Pod creates with the admission policies and %d without", o.policyCreates, o.policyCreates)
	pl, err := measurePolicies(ctx, cs, bare, o.policyCreates)
	if err != nil {
		return nil, err
	}
	r.add("policy-with-p50", ms(percentile(pl.with, 50)), "ms", "")
	r.add("policy-without-p50", ms(percentile(pl.without, 50)), "ms", "")
	r.add("policy-added-p50", ms(percentile(pl.with, 50))-ms(percentile(pl.without, 50)), "ms", "")
	r.add("policy-added-p99", ms(percentile(pl.with, 99))-ms(percentile(pl.without, 99)), "ms", "< 1")
	// The API server's own timing of its policy plugin, over every create of the measure (the creates without
	// the policies bound, and whatever else the cluster created meanwhile, included), per create with them bound:
	// what the policies cost a Pod at most, without the queueing of a busy machine.
	if pl.plugin.GetSampleCount() == 0 {
		say("the API server timed no create in its policy plugin (%s is empty)", policyPluginMetric)
	} else {
		r.add("policy-plugin-per-pod", pl.plugin.GetSampleSum()*1000/float64(max(len(pl.with), 1)), "ms", "< 1")
	}

	say("running %d Instances and %d bare Kueue Pods in pool %s", o.workloads, o.workloads, pool)
	// Where the worker's time goes while the workloads start (the per-card check's verdicts among it), for
	// `go tool pprof -top`.
	cpuProfile := make(chan error, 1)
	go func() {
		cpuProfile <- saveProfile(ctx, worker.url(strconv.Itoa(pprofPort), "/debug/pprof/profile?seconds=30"),
			filepath.Join(o.dir, "worker-cpu.pprof"), "CPU")
	}()
	rn, err := startWorkloads(ctx, k, pool, bare, o.workloads)
	if err != nil {
		return nil, err
	}
	if err := <-cpuProfile; err != nil {
		return nil, err
	}
	inst, pods := ms(percentile(rn.instances, 50)), ms(percentile(rn.pods, 50))
	r.add("instance-running-p50", inst, "ms", "")
	r.add("pod-running-p50", pods, "ms", "")
	r.add("instance-vs-pod-ratio", inst/pods, "", "<= 1.1")
	check, err := admissionCheck(ctx, worker.url(strconv.Itoa(metricsPort), "/metrics"))
	if err != nil {
		return nil, err
	}
	r.add("admission-check-p99", check.p99, "ms", "< 5")
	r.add("admission-check-per-second", check.perSecond, "/s", ">= 50")

	say("counting writes for %s with nothing changing", o.quiet)
	settleCtx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	err = settled(settleCtx, k, o.nodes)
	cancel()
	if err != nil {
		return nil, err
	}
	from := time.Now()
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-time.After(o.quiet):
	}
	to := time.Now()
	last, err := sampleProc(worker.pid)
	if err != nil {
		return nil, err
	}
	// The API server writes its audit log in batches: give the last one time to land.
	time.Sleep(2 * time.Second)
	writes, err := auditWrites(c.AuditLogPath(), from, to)
	if err != nil {
		return nil, err
	}
	r.add("quiet-writes", float64(writes.Writes), "count", "0")
	r.add("quiet-lease-writes", float64(writes.Leases), "count", "")
	r.add("quiet-reviews", float64(writes.Reviews), "count", "")
	r.QuietByResource = writes.ByResource
	r.add("worker-rss", float64(last.rssKiB)/1024, "MiB", "< 150")
	r.add("worker-rss-peak", float64(last.hwmK)/1024, "MiB", "< 200")
	r.add("worker-cpu", meanCores(first, last), "cores", "")
	// What the worker's memory holds, for `go tool pprof -top`: the run directory outlives the run.
	if err := saveProfile(ctx, worker.url(strconv.Itoa(pprofPort), "/debug/pprof/heap?gc=1"), filepath.Join(o.dir, "worker-heap.pprof"), "heap"); err != nil {
		return nil, err
	}
	return r, nil
}

// saveProfile writes one of the worker's profiles (what names it in messages) to a file.
func saveProfile(ctx context.Context, url, path, what string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return errors.Wrap(err, "cannot build the profile request")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return errors.Wrapf(err, "cannot read the worker's %s profile", what)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return errors.Wrapf(err, "cannot read the worker's %s profile", what)
	}
	fmt.Fprintf(os.Stderr, ">> the worker's %s profile is in %s (go tool pprof -top %s)\n", what, path, path)
	return errors.Wrapf(os.WriteFile(path, data, 0o644), "cannot write the %s profile", what)
}

// settled waits until every node has its Devices and the InstanceTypes' statuses stop changing. The stand-in
// agent publishes its thousands of nodes one after another (about four a second on a 2-core machine at 5,000
// nodes), so it waits as long as their number grows, and gives up when it has not grown for stallAfter.
func settled(ctx context.Context, k client.WithWatch, nodes int) error {
	const stallAfter = 3 * time.Minute
	have, grew, said := 0, time.Now(), time.Now()
	for {
		list := &workerv1.DevicesList{}
		if err := k.List(ctx, list); err != nil {
			return errors.Wrap(err, "cannot list Devices")
		}
		if len(list.Items) >= nodes {
			break
		}
		if len(list.Items) > have {
			have, grew = len(list.Items), time.Now()
		}
		if time.Since(grew) > stallAfter {
			return errors.Errorf("only %d of %d nodes have Devices, none more in %s", have, nodes, stallAfter)
		}
		if time.Since(said) > time.Minute {
			fmt.Fprintf(os.Stderr, ">>   %d of %d nodes have Devices\n", have, nodes)
			said = time.Now()
		}
		time.Sleep(2 * time.Second)
	}
	deadline := time.Now().Add(5*time.Minute + time.Duration(nodes)*100*time.Millisecond)
	for {
		last, rv, err := statuses(ctx, k)
		if err != nil {
			return err
		}
		if len(last) > 0 {
			changes, err := watchStatuses(ctx, k, last, rv)
			if err != nil {
				return err
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-changes:
			case <-time.After(15 * time.Second):
				return nil
			}
		}
		if time.Now().After(deadline) {
			return errors.New("the InstanceTypes' statuses did not settle")
		}
		time.Sleep(time.Second)
	}
}

// checkTimes are the per-card AdmissionCheck's decision times: the 99th percentile in ms, and the verdicts it
// gives per second of its own time (all verdicts over the seconds they took, one after another), the rate one
// verdict at a time sustains under the run's load.
type checkTimes struct {
	p99, perSecond float64
}

// admissionCheck reads the check's decision times from the worker's histogram.
func admissionCheck(ctx context.Context, url string) (checkTimes, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return checkTimes{}, errors.Wrap(err, "cannot build the metrics request")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return checkTimes{}, errors.Wrap(err, "cannot read the worker's metrics")
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		return checkTimes{}, errors.Wrap(err, "cannot parse the worker's metrics")
	}
	for _, m := range families["gpustack_admission_check_duration_seconds"].GetMetric() {
		h := m.GetHistogram()
		if q := histogramQuantile(0.99, h); !math.IsNaN(q) && h.GetSampleSum() > 0 {
			return checkTimes{p99: q * 1000, perSecond: float64(h.GetSampleCount()) / h.GetSampleSum()}, nil
		}
	}
	return checkTimes{}, errors.New("the worker judged no Workload: gpustack_admission_check_duration_seconds is empty")
}

// auditWrites counts the audited writes in a window.
func auditWrites(path string, from, to time.Time) (writeCount, error) {
	f, err := os.Open(path)
	if err != nil {
		return writeCount{}, errors.Wrap(err, "cannot open the audit log")
	}
	defer f.Close()
	return countWrites(f, from, to)
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// machine describes this machine: CPU model, cores and memory.
func machine() string {
	model, mem := "unknown CPU", ""
	if data, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for line := range strings.SplitSeq(string(data), "\n") {
			if name, ok := strings.CutPrefix(line, "model name"); ok {
				model = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(name), ":"))
				break
			}
		}
	}
	if data, err := os.ReadFile("/proc/meminfo"); err == nil {
		if kib, err := statusKiB(string(data), "MemTotal"); err == nil {
			mem = fmt.Sprintf(", %d GiB", (kib+(1<<19))>>20)
		}
	}
	return fmt.Sprintf("%s, %d cores%s", model, goruntime.NumCPU(), mem)
}
