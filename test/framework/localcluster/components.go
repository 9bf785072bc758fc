package localcluster

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"github.com/gpustack/gpustack-operator/providers/simulated"
)

func (c *Cluster) startEtcd(ctx context.Context) error {
	client := "http://127.0.0.1:" + strconv.Itoa(c.ports.etcdClient)
	peer := "http://127.0.0.1:" + strconv.Itoa(c.ports.etcdPeer)
	if err := c.start(componentEtcd, nil, c.bin("etcd"),
		"--name=local", "--data-dir="+c.path("etcd"),
		"--listen-client-urls="+client, "--advertise-client-urls="+client,
		"--listen-peer-urls="+peer, "--initial-advertise-peer-urls="+peer,
		"--initial-cluster=local="+peer,
		// The cluster is disposable: skipping fsync makes it several times faster on slow disks.
		"--unsafe-no-fsync", "--quota-backend-bytes="+strconv.Itoa(2<<30),
		"--listen-metrics-urls=", "--log-level=warn",
	); err != nil {
		return err
	}
	return c.waitFor(ctx, "etcd", time.Minute, func(ctx context.Context) error {
		return httpOK(ctx, client+"/health")
	})
}

func (c *Cluster) startAPIServer(ctx context.Context) error {
	pki := func(name string) string { return c.path("pki", name) }
	audit, err := c.auditFlags()
	if err != nil {
		return err
	}
	if err := c.start(componentAPIServer, nil, append([]string{c.bin("kube-apiserver"),
		"--etcd-servers=http://127.0.0.1:" + strconv.Itoa(c.ports.etcdClient),
		"--secure-port=" + strconv.Itoa(c.ports.apiServer),
		"--tls-cert-file=" + pki("kube-apiserver.crt"), "--tls-private-key-file=" + pki("kube-apiserver.key"),
		"--client-ca-file=" + pki("ca.crt"),
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file=" + pki("sa.pub"), "--service-account-signing-key-file=" + pki("sa.key"),
		"--authorization-mode=Node,RBAC", "--allow-privileged=true",
		"--kubelet-client-certificate=" + pki("kube-apiserver-kubelet-client.crt"),
		"--kubelet-client-key=" + pki("kube-apiserver-kubelet-client.key"),
		// The aggregation layer, for the worker-gateway's API: the front proxy's certificate and the headers
		// that name the user to the aggregated API server.
		"--requestheader-client-ca-file=" + pki("front-proxy-ca.crt"), "--requestheader-allowed-names=front-proxy-client",
		"--requestheader-username-headers=X-Remote-User", "--requestheader-group-headers=X-Remote-Group",
		"--requestheader-extra-headers-prefix=X-Remote-Extra-",
		"--proxy-client-cert-file=" + pki("front-proxy-client.crt"), "--proxy-client-key-file=" + pki("front-proxy-client.key"),
		"--profiling=false",
	}, append(audit, c.realNodeFlags()...)...)...); err != nil {
		return err
	}
	cs, err := kubernetes.NewForConfig(c.RESTConfig)
	if err != nil {
		return errors.Wrap(err, "cannot create client")
	}
	return c.waitFor(ctx, "kube-apiserver", 2*time.Minute, func(ctx context.Context) error {
		body, err := cs.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		if err != nil {
			return errors.Wrapf(err, "readyz: %s", body)
		}
		return nil
	})
}

// auditFlags returns the API server's audit flags: a policy that records the writes of Config.AuditUsers at
// the Metadata level, and nothing else. None when no user is named.
func (c *Cluster) auditFlags() ([]string, error) {
	if len(c.cfg.AuditUsers) == 0 {
		return nil, nil
	}
	policy := map[string]any{
		"apiVersion": "audit.k8s.io/v1", "kind": "Policy", "omitStages": []string{"RequestReceived"},
		"rules": []map[string]any{
			{"level": "Metadata", "users": c.cfg.AuditUsers, "verbs": []string{"create", "update", "patch", "delete", "deletecollection"}},
			{"level": "None"},
		},
	}
	data, err := yaml.Marshal(policy)
	if err != nil {
		return nil, errors.Wrap(err, "cannot encode the audit policy")
	}
	path := c.path("config", "audit-policy.yaml")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, errors.Wrap(err, "cannot create the configuration directory")
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		return nil, errors.Wrap(err, "cannot write the audit policy")
	}
	return []string{"--audit-policy-file=" + path, "--audit-log-path=" + c.AuditLogPath(), "--audit-log-format=json",
		"--audit-log-mode=batch"}, nil
}

func (c *Cluster) startControllers(ctx context.Context) error {
	pki := func(name string) string { return c.path("pki", name) }
	kcm := pki("kube-controller-manager.kubeconfig")
	if err := c.start(componentKCM, nil, supervised(c.bin("kube-controller-manager"),
		"--kubeconfig="+kcm, "--authentication-kubeconfig="+kcm, "--authorization-kubeconfig="+kcm,
		"--bind-address=127.0.0.1", "--secure-port="+strconv.Itoa(c.ports.kcm), "--leader-elect=false",
		"--service-account-private-key-file="+pki("sa.key"), "--root-ca-file="+pki("ca.crt"),
		"--use-service-account-credentials=true",
		"--cluster-signing-cert-file="+pki("ca.crt"), "--cluster-signing-key-file="+pki("ca.key"),
		"--controllers=*,bootstrapsigner,tokencleaner",
		// KWOK renews every simulated node's Lease from one process; with thousands of nodes on a loaded 2-core
		// machine a round can take longer than the default 40 s, and the node controller would mark healthy
		// nodes NotReady and their Pods not Ready, which KWOK never sets back.
		"--node-monitor-grace-period=2m",
	)...); err != nil {
		return err
	}
	sched := pki("kube-scheduler.kubeconfig")
	if err := c.start(componentScheduler, nil, supervised(c.bin("kube-scheduler"),
		"--kubeconfig="+sched, "--authentication-kubeconfig="+sched, "--authorization-kubeconfig="+sched,
		"--bind-address=127.0.0.1", "--secure-port="+strconv.Itoa(c.ports.scheduler), "--leader-elect=false",
	)...); err != nil {
		return err
	}
	for name, port := range map[string]int{componentKCM: c.ports.kcm, componentScheduler: c.ports.scheduler} {
		url := fmt.Sprintf("https://127.0.0.1:%d/healthz", port)
		if err := c.waitFor(ctx, name, 2*time.Minute, func(ctx context.Context) error { return httpOK(ctx, url) }); err != nil {
			return err
		}
	}
	// Pods are refused until the service-account controller has created the namespace's default account.
	cs, err := kubernetes.NewForConfig(c.RESTConfig)
	if err != nil {
		return errors.Wrap(err, "cannot create client")
	}
	return c.waitFor(ctx, "default service account", time.Minute, func(ctx context.Context) error {
		_, err := cs.CoreV1().ServiceAccounts(metav1.NamespaceDefault).Get(ctx, "default", metav1.GetOptions{})
		return err
	})
}

// kwokConfig is KWOK's configuration followed by the stages copied from the kwok module: nodes become Ready
// and keep a lease, Pods run, complete and are deleted.
func (c *Cluster) kwokConfig() (string, error) {
	cfg := fmt.Sprintf(`apiVersion: config.kwok.x-k8s.io/v1alpha1
kind: KwokConfiguration
options:
  manageAllNodes: false
  manageNodesWithAnnotationSelector: kwok.x-k8s.io/node=fake
  nodeIP: 127.0.0.1
  serverAddress: 127.0.0.1:%d
  enableCRDs: []
  podPlayStageParallelism: 4
  nodePlayStageParallelism: 4
  nodeLeaseDurationSeconds: 40
  nodeLeaseParallelism: 16
  podsOnNodeSyncParallelism: 4
`, c.ports.kwok)
	stages, err := filepath.Glob(filepath.Join(c.cfg.BinDir, "assets", "kwok-stages", "*.yaml"))
	if err != nil || len(stages) == 0 {
		return "", errors.New("no KWOK stages in bin/assets/kwok-stages: run `make tools`")
	}
	for _, s := range stages {
		data, err := os.ReadFile(s)
		if err != nil {
			return "", errors.Wrap(err, "cannot read KWOK stage")
		}
		cfg += "---\n" + string(data)
	}
	path := c.path("config", "kwok.yaml")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return "", errors.Wrap(err, "cannot create config directory")
	}
	return path, errors.Wrap(os.WriteFile(path, []byte(cfg), 0o644), "cannot write KWOK configuration")
}

// kwokNodes are the nodes KWOK plays: the inventory's when they are not real, and Config.KWOKNodes.
func kwokNodes(cfg Config) []simulated.Node {
	var out []simulated.Node
	if !cfg.RealNodes && cfg.Inventory != nil {
		out = append(out, cfg.Inventory.Nodes...)
	}
	if cfg.KWOKNodes != nil {
		out = append(out, cfg.KWOKNodes.Nodes...)
	}
	return out
}

func (c *Cluster) startKWOK(ctx context.Context) error {
	cfg, err := c.kwokConfig()
	if err != nil {
		return err
	}
	if err := c.start(componentKWOK, nil, c.bin("kwok"), "--kubeconfig="+c.Kubeconfig, "--config="+cfg); err != nil {
		return err
	}
	cs, err := kubernetes.NewForConfig(c.RESTConfig)
	if err != nil {
		return errors.Wrap(err, "cannot create client")
	}
	nodes := kwokNodes(c.cfg)
	if err := parallel(ctx, len(nodes), func(ctx context.Context, i int) error {
		_, err := cs.CoreV1().Nodes().Create(ctx, kwokNode(nodes[i]), metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return errors.Wrapf(err, "cannot create node %s", nodes[i].Name)
		}
		return nil
	}); err != nil {
		return err
	}
	// KWOK marks a few hundred nodes Ready a second on these machines; thousands need longer than a few.
	timeout := 2*time.Minute + time.Duration(len(nodes))*50*time.Millisecond
	return c.waitFor(ctx, "nodes", timeout, func(ctx context.Context) error {
		list, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{ResourceVersion: "0"})
		if err != nil {
			return err
		}
		ready := map[string]bool{}
		for i := range list.Items {
			ready[list.Items[i].Name] = NodeReady(&list.Items[i])
		}
		for _, n := range nodes {
			if !ready[n.Name] {
				return errors.Errorf("node %s is not Ready", n.Name)
			}
		}
		return nil
	})
}

func ensureNamespace(ctx context.Context, cs kubernetes.Interface, name string) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return errors.Wrapf(err, "cannot create namespace %s", name)
	}
	return nil
}

// NodeReady reports whether the node's Ready condition is True.
func NodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// httpOK succeeds when url answers 200. Loopback components serve self-signed certificates, so the health
// probe does not verify them.
func httpOK(ctx context.Context, url string) error {
	client := &http.Client{
		Timeout:   2 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}, // a loopback health probe
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return errors.Errorf("%s answered %s", url, resp.Status)
	}
	return nil
}
