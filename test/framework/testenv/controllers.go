package testenv

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpustack/gpustack-operator/apis/scheme"
	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
)

// ControllerSuite is the API server a controller package's tests share: envtest with this project's CRDs,
// Kueue's and NFD's, and the gpustack-system namespace. Tests call a Reconciler directly, through a client that
// reads the API server uncached, so each reconcile sees what the one before wrote.
type ControllerSuite struct {
	// Skipped is why the suite's tests skip (a plain go test has no binaries), empty when they run.
	Skipped string
	// Client talks to the API server.
	Client client.WithWatch
}

// ControllerMain runs a controller package's tests against a fresh ControllerSuite and stops it afterwards.
func ControllerMain(m *testing.M, s *ControllerSuite) int {
	return EnvtestMain(m, &s.Skipped, func(bin string) []string {
		return []string{Path("package", "crds"), filepath.Join(bin, "assets", "kueue-crds"),
			filepath.Join(bin, "assets", "nfd-crds.yaml")}
	}, func(cfg *rest.Config) error {
		c, err := client.NewWithWatch(cfg, client.Options{Scheme: scheme.New()})
		if err != nil {
			return errors.Wrap(err, "cannot create the suite's client")
		}
		s.Client = c
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: workerv1.SystemNamespace}}
		return errors.Wrap(c.Create(context.Background(), ns), "cannot create the system namespace")
	})
}

// Skip skips t when the suite has no API server.
func (s *ControllerSuite) Skip(t testing.TB) {
	t.Helper()
	if s.Skipped != "" {
		t.Skip(s.Skipped)
	}
}

// Create creates each object, then writes its status when it has one, as the component that owns the status
// would; every object is deleted again when the test ends, so each test starts from what it creates.
func (s *ControllerSuite) Create(t testing.TB, objs ...client.Object) {
	t.Helper()
	ctx := context.Background()
	for _, o := range objs {
		status := o.DeepCopyObject().(client.Object)
		// Some kinds (Node) keep a status sent with the create; it would then be owned by no field manager,
		// unlike a real component's, so the status is always written by an update of its own.
		clearStatus(o)
		if err := s.Client.Create(ctx, o); err != nil {
			t.Fatalf("cannot create %T %s: %v", o, o.GetName(), err)
		}
		t.Cleanup(func() { _ = s.Client.Delete(ctx, o, client.GracePeriodSeconds(0)) })
		if err := copyStatus(status, o); err != nil {
			continue // a kind without status
		}
		// An update that carries managedFields replaces them; without them the status is owned by this writer,
		// as the kubelet owns a real node's.
		o.SetManagedFields(nil)
		if err := s.Client.Status().Update(ctx, o); err != nil {
			t.Fatalf("cannot write the status of %T %s: %v", o, o.GetName(), err)
		}
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
