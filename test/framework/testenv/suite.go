package testenv

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpustack/gpustack-operator/apis/scheme"
	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
)

// EnvtestSuite is the API server a package's Ginkgo suite shares (the integration tier): envtest with this
// project's CRDs, Kueue's and NFD's, and the gpustack-system namespace. Its client reads the API server
// uncached, so a spec that calls a Reconciler directly sees at once what the reconcile before wrote.
type EnvtestSuite struct {
	// Client talks to the API server.
	Client client.WithWatch
	// Config is the API server's administrator configuration, for a spec that runs a manager.
	Config *rest.Config
	stop   func()
}

// RunSuite runs a package's Ginkgo specs against s: started before the first spec, stopped after the last.
func RunSuite(t *testing.T, description string, s *EnvtestSuite) {
	gomega.RegisterFailHandler(ginkgo.Fail)
	ginkgo.BeforeSuite(s.Start)
	ginkgo.AfterSuite(s.Stop)
	ginkgo.RunSpecs(t, description)
}

// Start starts the API server; RunSuite calls it before the first spec. Without the binaries (a plain go test) it skips the
// suite; with GPUSTACK_BIN set and a binary missing it fails, so `make test` never passes by skipping.
func (s *EnvtestSuite) Start() {
	bin, skip, err := BinDir("etcd", "kube-apiserver")
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	if skip != "" {
		ginkgo.Skip(skip)
	}
	cfg, stop, err := StartEnvtest(bin, Path("package", "crds"), filepath.Join(bin, "assets", "kueue-crds"),
		filepath.Join(bin, "assets", "nfd-crds.yaml"))
	s.stop, s.Config = stop, cfg
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	s.Client, err = client.NewWithWatch(cfg, client.Options{Scheme: scheme.New()})
	gomega.Expect(err).NotTo(gomega.HaveOccurred(), "cannot create the suite's client")
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: workerv1.SystemNamespace}}
	gomega.Expect(s.Client.Create(context.Background(), ns)).To(gomega.Succeed(), "cannot create the system namespace")
}

// Stop stops the API server; RunSuite calls it after the last spec. It is safe when Start skipped or failed half-way.
func (s *EnvtestSuite) Stop() {
	if s.stop != nil {
		s.stop()
	}
}

// Create creates each object, then writes its status when it has one, as the component that owns the status
// would; every object is deleted again when the spec ends, so each spec starts from what it creates.
func (s *EnvtestSuite) Create(objs ...client.Object) {
	ginkgo.GinkgoHelper()
	ctx := context.Background()
	for _, o := range objs {
		status := o.DeepCopyObject().(client.Object)
		// Some kinds (Node) keep a status sent with the create; it would then be owned by no field manager,
		// unlike a real component's, so the status is always written by an update of its own.
		clearStatus(o)
		gomega.Expect(s.Client.Create(ctx, o)).To(gomega.Succeed(), "cannot create %T %s", o, o.GetName())
		ginkgo.DeferCleanup(func() { _ = s.Client.Delete(context.Background(), o, client.GracePeriodSeconds(0)) })
		if err := copyStatus(status, o); err != nil {
			continue // a kind without status
		}
		// An update that carries managedFields replaces them; without them the status is owned by this writer,
		// as the kubelet owns a real node's.
		o.SetManagedFields(nil)
		gomega.Expect(s.Client.Status().Update(ctx, o)).To(gomega.Succeed(), "cannot write the status of %T %s", o, o.GetName())
	}
}

// clearStatus empties the status of the kinds copyStatus knows.
func clearStatus(o client.Object) {
	switch o := o.(type) {
	case *corev1.Node:
		o.Status = corev1.NodeStatus{}
	case *corev1.Pod:
		o.Status = corev1.PodStatus{}
	case *corev1.PersistentVolumeClaim:
		o.Status = corev1.PersistentVolumeClaimStatus{}
	}
}

// copyStatus moves the status the caller wrote onto the created object (the API server drops a status sent
// with a create); an object with an empty status, or none, is an error so the caller writes nothing.
func copyStatus(from, to client.Object) error {
	switch f := from.(type) {
	case *corev1.Node:
		if len(f.Status.Capacity) == 0 && len(f.Status.Conditions) == 0 {
			return errors.New("no status")
		}
		to.(*corev1.Node).Status = f.Status
	case *corev1.Pod:
		if f.Status.Phase == "" {
			return errors.New("no status")
		}
		to.(*corev1.Pod).Status = f.Status
	case *corev1.PersistentVolumeClaim:
		if f.Status.Phase == "" {
			return errors.New("no status")
		}
		to.(*corev1.PersistentVolumeClaim).Status = f.Status
	default:
		return errors.New("no status to copy")
	}
	return nil
}
