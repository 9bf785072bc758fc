package main

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	nfdv1alpha1 "sigs.k8s.io/node-feature-discovery/api/nfd/v1alpha1"

	"github.com/gpustack/gpustack-operator/apis/scheme"
	settingsv1 "github.com/gpustack/gpustack-operator/apis/settings/v1"
	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
	"github.com/gpustack/gpustack-operator/devicemanager"
	"github.com/gpustack/gpustack-operator/internal/cachepolicy"
	"github.com/gpustack/gpustack-operator/internal/controller/cardcheck"
	"github.com/gpustack/gpustack-operator/internal/controller/composer"
	"github.com/gpustack/gpustack-operator/internal/controller/cpuinfo"
	"github.com/gpustack/gpustack-operator/internal/controller/credential"
	"github.com/gpustack/gpustack-operator/internal/controller/instance"
	"github.com/gpustack/gpustack-operator/internal/controller/ledger"
	"github.com/gpustack/gpustack-operator/internal/controller/nodecapacity"
	"github.com/gpustack/gpustack-operator/internal/controller/nodefit"
	"github.com/gpustack/gpustack-operator/internal/controller/persistentvolume"
	"github.com/gpustack/gpustack-operator/internal/controller/persistentvolumetype"
	"github.com/gpustack/gpustack-operator/internal/controller/profiler"
	"github.com/gpustack/gpustack-operator/internal/controller/setting"
	"github.com/gpustack/gpustack-operator/internal/kueueconfig"
	"github.com/gpustack/gpustack-operator/internal/settings"
	"github.com/gpustack/gpustack-operator/internal/settingsapi"
	"github.com/gpustack/gpustack-operator/internal/webhooks"
)

// leaseName is the Lease the worker replicas elect their leader with.
const leaseName = "gpustack-operator-worker"

// +kubebuilder:rbac:groups=coordination.k8s.io,namespace=gpustack-system,resources=leases,verbs=get;list;watch;create;update;patch;delete

func runWorker(args []string) error {
	fs := flag.NewFlagSet("worker", flag.ExitOnError)
	kubeconfig := fs.String("kubeconfig", "", "kubeconfig; in-cluster configuration when empty")
	metrics := fs.String("metrics-bind-address", "0", "address of the metrics endpoint; 0 turns it off")
	pprof := fs.String("pprof-bind-address", "0", "address of Go's profiling endpoints (/debug/pprof/), for measuring the worker; 0 turns them off")
	health := fs.String("health-probe-bind-address", ":8081", "address of the health probes; 0 turns them off")
	webhookPort := fs.Int("webhook-port", 0, "port of the admission webhooks (Instance rules, Pod units fold); 0 serves none")
	webhookHost := fs.String("webhook-host", "", "address the webhooks listen on; all when empty")
	webhookCertDir := fs.String("webhook-cert-dir", "", "directory with the webhooks' tls.crt and tls.key; written by the worker when it provisions them")
	webhookService := fs.String("webhook-service", "", "Service in front of the webhooks, in the worker's namespace (POD_NAMESPACE): the worker provisions their certificate and configurations")
	webhookURL := fs.String("webhook-url", "", "base URL the API server reaches the webhooks at, instead of a Service (https://127.0.0.1:9443)")
	webhookSecret := fs.String("webhook-secret", "gpustack-worker-webhook-tls", "Secret with the webhooks' tls.crt, tls.key and ca.crt")
	settingsAPIPort := fs.Int("settings-api-port", 0, "port of the settings API (settings.gpustack.ai/v1, which the APIService "+settingsv1.APIServiceName+
		" sends to --webhook-service on a port of its own), served with the webhooks' certificate; 0 serves none")
	webhookCertManager := fs.Bool("webhook-cert-manager", false, "cert-manager issues the webhook Secret: wait for it instead of self-signing")
	agentImage := fs.String("device-manager-image", "", "deploy the device managers with this image (namespace gpustack-device-manager, one DaemonSet per manufacturer); empty deploys none")
	enforcerImage := fs.String("enforcer-image", "", "an image of the soft-slicing enforcers (libvgpu.so and its kin under "+devicemanager.EnforcerImageDir+", with sh and cp) that each device manager copies to its node before it starts; empty copies none")
	kueueConfig := fs.String("kueue-config", workerv1.KueueNamespace+"/"+kueueconfig.ConfigMap, "namespace/name of the ConfigMap that holds the Kueue controller's configuration ("+kueueconfig.ConfigKey+"): the worker checks it carries what the operator needs and says what it lacks on every InstanceType (condition "+composer.ConditionKueueConfigured+"); empty checks nothing")
	leaderElect := fs.Bool("leader-elect", true, "run the controllers and the AdmissionCheck on one replica at a time, the holder of the Lease "+leaseName+" in the worker's namespace; every replica serves the webhooks")
	// client-go's own limit (5 requests a second, bursts of 10) held each verdict of the check and each Instance
	// behind the others' reads; these are Kueue's defaults.
	qps := fs.Float64("kube-api-qps", 50, "requests a second the worker sends the API server, on average")
	burst := fs.Int("kube-api-burst", 100, "requests the worker may send the API server at once")
	_ = fs.Parse(args)
	ctrl.SetLogger(zap.New())

	ctx := ctrl.SetupSignalHandler()
	// The manager reads the API server's discovery as it is made.
	cfg, err := readyConfig(ctx, *kubeconfig)
	if err != nil {
		return err
	}
	cfg.QPS, cfg.Burst = float32(*qps), *burst
	s := scheme.New()
	opts := ctrl.Options{
		Scheme: s, Metrics: metricsserver.Options{BindAddress: *metrics}, HealthProbeBindAddress: *health,
		PprofBindAddress: *pprof,
		Cache:            cachepolicy.Options(),
		// The composer reads what it applies as unstructured objects; uncached, each recompute cost a request per
		// composed object, and at thousands of nodes those reads used up the worker's request budget.
		Client: client.Options{Cache: &client.CacheOptions{Unstructured: true}},
		// Two composers would prune each other's objects and two checks could both admit onto the last free
		// card: one replica leads. It gives the Lease back when it stops, so a rolling update hands over at once.
		LeaderElection: *leaderElect, LeaderElectionID: leaseName, LeaderElectionNamespace: podNamespace(),
		LeaderElectionReleaseOnCancel: true,
	}
	if *webhookCertDir == "" {
		*webhookCertDir = filepath.Join(os.TempDir(), "k8s-webhook-server", "serving-certs")
	}
	if *webhookPort > 0 {
		opts.WebhookServer = webhook.NewServer(webhook.Options{Host: *webhookHost, Port: *webhookPort, CertDir: *webhookCertDir})
	}
	mgr, err := ctrl.NewManager(cfg, opts)
	if err != nil {
		return errors.Wrap(err, "cannot create the manager")
	}
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return errors.Wrap(err, "cannot add the health check")
	}
	if err := mgr.AddReadyzCheck("ping", healthz.Ping); err != nil {
		return errors.Wrap(err, "cannot add the readiness check")
	}
	direct, err := client.New(cfg, client.Options{Scheme: s})
	if err != nil {
		return errors.Wrap(err, "cannot create a client")
	}
	if err := bootstrap(ctx, direct); err != nil {
		return err
	}
	if *webhookPort > 0 && (*webhookService != "" || *webhookURL != "") {
		serving := webhooks.Serving{Namespace: podNamespace(), Service: *webhookService, URL: *webhookURL, Secret: *webhookSecret,
			CertManager: *webhookCertManager, CertDir: *webhookCertDir}
		if *settingsAPIPort > 0 && *webhookService != "" {
			serving.APIServices = []string{settingsv1.APIServiceName}
		}
		if err := provisionWebhooks(ctx, mgr, direct, serving); err != nil {
			return err
		}
	}
	if err := deployNodeAgents(ctx, direct, *agentImage, *enforcerImage); err != nil {
		return err
	}
	if err := setupNodeProfile(ctx, mgr, direct); err != nil {
		return err
	}
	//nolint:staticcheck // the core/v1 events API until the conditions-and-events work moves to events.k8s.io.
	comp := &composer.Reconciler{Client: mgr.GetClient(), Recorder: mgr.GetEventRecorderFor("gpustack-composer")}
	if *kueueConfig != "" {
		if err := watchKueueConfig(mgr, comp, *kueueConfig); err != nil {
			return err
		}
	}
	if err := comp.SetupWithManager(mgr); err != nil {
		return errors.Wrap(err, "cannot set up the composer")
	}
	//nolint:staticcheck // the core/v1 events API until the conditions-and-events work moves to events.k8s.io.
	if err := (&setting.Reconciler{Client: mgr.GetClient(), Recorder: mgr.GetEventRecorderFor("gpustack-settings")}).SetupWithManager(mgr); err != nil {
		return errors.Wrap(err, "cannot set up the settings controller")
	}
	//nolint:staticcheck // the core/v1 events API until the conditions-and-events work moves to events.k8s.io.
	if err := (&instance.Reconciler{Client: mgr.GetClient(), Recorder: mgr.GetEventRecorderFor("gpustack-instance")}).SetupWithManager(mgr); err != nil {
		return errors.Wrap(err, "cannot set up the Instance controller")
	}
	if err := setupLedgerAndCheck(ctx, mgr, direct); err != nil {
		return err
	}
	if err := setupInstanceStorageAndCapacity(mgr); err != nil {
		return err
	}
	if *webhookPort > 0 {
		if err := webhooks.Setup(mgr); err != nil {
			return errors.Wrap(err, "cannot set up the webhooks")
		}
		// Ready only once the webhooks answer: the API server calls them for every Instance.
		if err := mgr.AddReadyzCheck("webhooks", mgr.GetWebhookServer().StartedChecker()); err != nil {
			return errors.Wrap(err, "cannot add the webhook readiness check")
		}
	}
	if *settingsAPIPort > 0 {
		if err := setupSettingsAPI(mgr, cfg, s, *settingsAPIPort, *webhookCertDir, *kubeconfig); err != nil {
			return err
		}
	}
	return errors.Wrap(mgr.Start(ctx), "manager stopped")
}

// provisionWebhooks makes the webhooks' key pair and CA bundles before the manager starts, and keeps them.
func provisionWebhooks(ctx context.Context, mgr ctrl.Manager, c client.Client, serving webhooks.Serving) error {
	if err := webhooks.Provision(ctx, c, serving, time.Now(), 5*time.Minute); err != nil {
		return errors.Wrap(err, "cannot provision the webhooks")
	}
	// A renewed Secret (cert-manager) or a self-signed pair near its end is served without a restart.
	return errors.Wrap(mgr.Add(&webhooks.Rotation{Client: c, Serving: serving, Every: time.Minute,
		Log: ctrl.Log.WithName("webhook-certificate")}), "cannot add the webhook certificate rotation")
}

// setupSettingsAPI serves settings.gpustack.ai/v1 on port, on every replica, with the webhooks' key pair in
// certDir; it reads and writes the stored Settings directly, so that the resourceVersions it hands out are the
// API server's.
func setupSettingsAPI(mgr ctrl.Manager, cfg *rest.Config, s *runtime.Scheme, port int, certDir, kubeconfig string) error {
	c, err := client.NewWithWatch(cfg, client.Options{Scheme: s})
	if err != nil {
		return errors.Wrap(err, "cannot create the settings API's client")
	}
	server := &settingsapi.Server{Port: port, CertFile: filepath.Join(certDir, "tls.crt"), KeyFile: filepath.Join(certDir, "tls.key"),
		Kubeconfig: kubeconfig, Storage: &settingsapi.REST{Client: c}}
	if err := mgr.Add(server); err != nil {
		return errors.Wrap(err, "cannot add the settings API")
	}
	// Ready only once it answers: kube-apiserver marks the APIService unavailable until then.
	return errors.Wrap(mgr.AddReadyzCheck("settings-api", server.Ready), "cannot add the settings API's readiness check")
}

// setupLedgerAndCheck registers the ledger and the per-card check, which both list a node's Pods through one
// index of the cache. Where the cluster serves ResourceClaims and the worker's role lets it read them, both
// charge those the DRA drivers allocated cards to as well; a role older than this binary (during an upgrade)
// leaves the claims out, and says so: a cache that may not list them would never sync and would stop the worker.
func setupLedgerAndCheck(ctx context.Context, mgr ctrl.Manager, direct client.Client) error {
	if err := cachepolicy.IndexPodsByNode(ctx, mgr.GetFieldIndexer()); err != nil {
		return err
	}
	release, err := ledger.ReleaseTerminatedFromEnv(os.Getenv)
	if err != nil {
		return err
	}
	claims, err := servesResourceClaims(mgr.GetRESTMapper())
	if err != nil {
		return err
	}
	if claims {
		if claims, err = mayWatch(ctx, direct, resourceapi.GroupName, "resourceclaims"); err != nil {
			return err
		}
		if !claims {
			ctrl.Log.WithName("ledger").Error(errors.New("the worker may not list and watch ResourceClaims"),
				"the cards DRA allocates are not counted by the ledger and the per-card check until the worker's role allows it")
		}
	}
	templates := false
	if claims {
		if err := cachepolicy.IndexResourceClaimsByPool(ctx, mgr.GetFieldIndexer()); err != nil {
			return err
		}
		if templates, err = mayWatch(ctx, direct, resourceapi.GroupName, "resourceclaimtemplates"); err != nil {
			return err
		}
		if !templates {
			ctrl.Log.WithName("cardcheck").Error(errors.New("the worker may not list and watch ResourceClaimTemplates"),
				"what a Workload's Pods ask through DRA is not judged card by card until the worker's role allows it")
		}
	}
	resourceSlices := false
	if templates {
		if resourceSlices, err = mayWatch(ctx, direct, resourceapi.GroupName, "resourceslices"); err != nil {
			return err
		}
		if !resourceSlices {
			ctrl.Log.WithName("cardcheck").Error(errors.New("the worker may not list and watch ResourceSlices"),
				"the selectors of the requests of a Workload's ResourceClaimTemplates are not read until the worker's role allows it")
		}
	}
	if resourceSlices {
		if err := cachepolicy.IndexResourceSlicesByNode(ctx, mgr.GetFieldIndexer()); err != nil {
			return err
		}
	}
	//nolint:staticcheck // the core/v1 events API until the conditions-and-events work moves to events.k8s.io.
	if err := (&ledger.Reconciler{Client: mgr.GetClient(), Recorder: mgr.GetEventRecorderFor("gpustack-ledger"),
		ReleaseTerminated: release, ResourceClaims: claims}).SetupWithManager(mgr); err != nil {
		return errors.Wrap(err, "cannot set up the ledger")
	}
	//nolint:staticcheck // the core/v1 events API until the conditions-and-events work moves to events.k8s.io.
	if err := (&cardcheck.Reconciler{Client: mgr.GetClient(), Recorder: mgr.GetEventRecorderFor("gpustack-node-devices"),
		Log: ctrl.Log.WithName("cardcheck"), ResourceClaims: claims, ResourceClaimTemplates: templates,
		ResourceSlices: resourceSlices}).SetupWithManager(mgr); err != nil {
		return errors.Wrap(err, "cannot set up the node-devices admission check")
	}
	return nil
}

// servesResourceClaims reports whether the API server serves resource.k8s.io/v1 ResourceClaims (Kubernetes
// 1.34 and later).
func servesResourceClaims(m meta.RESTMapper) (bool, error) {
	_, err := m.RESTMapping(schema.GroupKind{Group: resourceapi.GroupName, Kind: "ResourceClaim"}, resourceapi.SchemeGroupVersion.Version)
	if meta.IsNoMatchError(err) {
		return false, nil
	}
	return err == nil, errors.Wrap(err, "cannot discover resource.k8s.io/v1")
}

// podNamespace returns the worker's namespace, which the Pod learns through the downward API.
func podNamespace() string {
	if ns := os.Getenv("POD_NAMESPACE"); ns != "" {
		return ns
	}
	return workerv1.SystemNamespace
}

// +kubebuilder:rbac:groups="",resources=namespaces,verbs=create

// bootstrap prepares what the controllers expect: the system namespace and every Setting, seeded from the
// gpustack-settings Secret when it exists.
func bootstrap(ctx context.Context, c client.Client) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: workerv1.SystemNamespace}}
	if err := c.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		return errors.Wrap(err, "cannot create the system namespace")
	}
	problems, err := settings.Ensure(ctx, c, os.Getenv)
	for _, p := range problems {
		ctrl.Log.WithName("settings").Info("a Setting is left as it is", "problem", p)
	}
	return errors.Wrap(err, "cannot prepare the settings")
}

// setupNodeProfile sets up what describes each node to NFD: its worker NodeFeature (the profiler), its fit
// labels and the cpu-info NodeFeatureRule. The rule's controller is left out, and says so, where the worker's
// role does not let it read NodeFeatureRules (a role older than this binary, during an upgrade): its cache
// would never sync and would stop the worker.
func setupNodeProfile(ctx context.Context, mgr ctrl.Manager, direct client.Client) error {
	//nolint:staticcheck // the core/v1 events API until the conditions-and-events work moves to events.k8s.io.
	if err := (&profiler.Reconciler{Client: mgr.GetClient(), Recorder: mgr.GetEventRecorderFor("gpustack-profiler")}).SetupWithManager(mgr); err != nil {
		return errors.Wrap(err, "cannot set up the profiler")
	}
	if err := (&nodefit.Reconciler{Client: mgr.GetClient()}).SetupWithManager(mgr); err != nil {
		return errors.Wrap(err, "cannot set up the node fit labels")
	}
	allowed, err := mayWatch(ctx, direct, nfdv1alpha1.SchemeGroupVersion.Group, "nodefeaturerules")
	if err != nil {
		return err
	}
	if !allowed {
		ctrl.Log.WithName("cpuinfo").Error(errors.New("the worker may not list NodeFeatureRules"),
			"the cpu-info rule is not kept: Nodes get no feature.gpustack.ai/cpu-* annotations until the worker's role allows it")
		return nil
	}
	return errors.Wrap((&cpuinfo.Reconciler{Client: mgr.GetClient()}).SetupWithManager(mgr), "cannot set up the cpu-info rule")
}

// mayWatch reports whether the worker's role lets it list and watch a resource, as its cache does.
func mayWatch(ctx context.Context, direct client.Client, group, resource string) (bool, error) {
	for _, verb := range []string{"list", "watch"} {
		review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
			ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: verb, Group: group, Resource: resource}}}
		if err := direct.Create(ctx, review); err != nil {
			return false, errors.Wrapf(err, "cannot review the worker's access to %s", resource)
		}
		if !review.Status.Allowed {
			return false, nil
		}
	}
	return true, nil
}

// deployNodeAgents deploys the node agents of image (none when it is empty) with the enforcers of
// enforcerImage. The worker's variables they take are read first: one the worker cannot read stops it. A node
// agent the worker may not deploy (a role older than this binary, during an upgrade) is reported and leaves the
// others, and the worker, running.
func deployNodeAgents(ctx context.Context, c client.Client, image, enforcerImage string) error {
	if image == "" {
		return nil
	}
	d, err := devicemanager.DeploymentFromEnv(image)
	if err != nil {
		return err
	}
	d.EnforcerImage = enforcerImage
	if err := deployAgents(ctx, c, d); err != nil {
		ctrl.Log.WithName("node-agents").Error(err, "cannot deploy every node agent; the others are deployed")
	}
	return nil
}

// The agents' namespace, service account and roles ship with the chart, so the worker needs no right to
// grant roles: it applies the DaemonSets alone, in the agents' namespace, and patches them by name.
// +kubebuilder:rbac:groups=apps,namespace=gpustack-device-manager,resources=daemonsets,verbs=create
// +kubebuilder:rbac:groups=apps,namespace=gpustack-device-manager,resources=daemonsets,verbs=get;patch,resourceNames=gpustack-operator-device-manager-amd;gpustack-operator-device-manager-ascend;gpustack-operator-device-manager-cambricon;gpustack-operator-device-manager-hygon;gpustack-operator-device-manager-iluvatar;gpustack-operator-device-manager-metax;gpustack-operator-device-manager-mthreads;gpustack-operator-device-manager-nvidia;gpustack-operator-device-manager-rdma;gpustack-operator-device-manager-thead;gpustack-operator-cpu-info

// deployAgents server-side applies the node agents' DaemonSets, each whatever became of the others; applying
// what is already there writes nothing.
func deployAgents(ctx context.Context, c client.Client, d devicemanager.Deployment) error {
	var errs []error
	for _, o := range d.Objects() {
		u, err := scheme.ForApply(o)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		//nolint:staticcheck // client.Apply with an unstructured object is the documented way to server-side apply it.
		if err := c.Patch(ctx, u, client.Apply, client.FieldOwner("gpustack-operator"), client.ForceOwnership); err != nil {
			errs = append(errs, errors.Wrapf(err, "cannot apply %s %s", u.GetKind(), u.GetName()))
		}
	}
	return errors.Join(errs...)
}

// watchKueueConfig checks the running Kueue's configuration (the ConfigMap namespace/name) when it changes, and
// every minute, and tells the composer, which says on every InstanceType what it lacks.
func watchKueueConfig(mgr ctrl.Manager, comp *composer.Reconciler, where string) error {
	ns, name, ok := strings.Cut(where, "/")
	if !ok || ns == "" || name == "" {
		return errors.Errorf("--kueue-config %q: want namespace/name", where)
	}
	watcher, err := client.NewWithWatch(mgr.GetConfig(), client.Options{Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper()})
	if err != nil {
		return errors.Wrap(err, "cannot create the client that watches Kueue's configuration")
	}
	changed := make(chan event.GenericEvent, 1)
	watch := &kueueconfig.Watch{Reader: mgr.GetAPIReader(), Watcher: watcher, Namespace: ns, Name: name, Log: ctrl.Log.WithName("kueue-config"),
		Changed: func() {
			// One pending event is enough: the composer reads the latest answer.
			select {
			case changed <- event.GenericEvent{Object: &corev1.ConfigMap{}}:
			default:
			}
		}}
	comp.Kueue, comp.KueueChanged = watch, changed
	return errors.Wrap(mgr.Add(watch), "cannot add the Kueue configuration check")
}

// setupInstanceStorageAndCapacity registers the controllers that need nothing but the manager's client: the
// dispatched Instances' Pods, the volumes and their types, the credentials and the node counting keys.
func setupInstanceStorageAndCapacity(mgr ctrl.Manager) error {
	c := mgr.GetClient()
	for _, s := range []struct {
		name  string
		setup interface{ SetupWithManager(ctrl.Manager) error }
		// kind is the kind the controller writes, when its CRD may be newer than the cluster's.
		kind client.Object
	}{
		{"dispatched Instance Pod", &instance.DispatchedReconciler{Client: c}, nil},
		{"persistent volume", &persistentvolume.Reconciler{Client: c}, nil},
		{"persistent volume type", &persistentvolumetype.Reconciler{Client: c}, &workerv1.InstancePersistentVolumeType{}},
		{"SSH public key", credential.SSHPublicKeys(c), &workerv1.InstanceSSHPublicKey{}},
		{"image pull secret", credential.ImagePullSecrets(c), &workerv1.InstanceImagePullSecret{}},
		{"node capacity", &nodecapacity.Reconciler{Client: c}, nil},
	} {
		if s.kind != nil && !instance.Served(mgr, s.kind) {
			// Helm leaves the CRDs as they were on upgrade: the controller starts once they are applied and the
			// worker restarts.
			ctrl.Log.Info("not starting the " + s.name + " controller: its CRD is not installed (apply the chart's crds/ and restart the worker)")
			continue
		}
		if err := s.setup.SetupWithManager(mgr); err != nil {
			return errors.Wrapf(err, "cannot set up the %s controller", s.name)
		}
	}
	return nil
}
