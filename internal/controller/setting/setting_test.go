package setting_test

import (
	"context"
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
	"github.com/gpustack/gpustack-operator/internal/controller/setting"
	"github.com/gpustack/gpustack-operator/internal/settings"
	"github.com/gpustack/gpustack-operator/test/framework/testenv"
)

var suite testenv.ControllerSuite

func TestMain(m *testing.M) { os.Exit(testenv.ControllerMain(m, &suite)) }

func makeSetting(name, value string) *workerv1.Setting {
	return &workerv1.Setting{ObjectMeta: metav1.ObjectMeta{Namespace: workerv1.SystemNamespace, Name: name},
		Spec: workerv1.SettingSpec{Value: value}}
}

func makeSecret(data map[string]string) *corev1.Secret {
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: workerv1.SystemNamespace, Name: settings.SecretName},
		Data: map[string][]byte{}}
	for k, v := range data {
		s.Data[k] = []byte(v)
	}
	return s
}

// TestReconcile reconciles one Setting and checks its status and the Secret's keys; a second reconcile of the
// converged state must write nothing.
func TestReconcile(t *testing.T) {
	suite.Skip(t)
	type want struct {
		Status workerv1.SettingStatus
		Secret map[string]string
	}
	aware := workerv1.SettingInstanceTypeAwareCPUManufacturer
	awareDesc := "split pools, queues and the catalog by CPU key; ResourceFlavors never change"
	cases := map[string]struct {
		reason  string
		objects []client.Object
		name    string
		want    want
	}{
		"ValueTakesEffect": {
			reason:  "A Setting's value becomes its effective value, and the Secret is created with that key alone.",
			objects: []client.Object{makeSetting(aware, "true")},
			name:    aware,
			want: want{Status: workerv1.SettingStatus{Value: "true", Default: "false", Description: awareDesc, Editable: true},
				Secret: map[string]string{aware: "true"}},
		},
		"EmptyValueIsDefault": {
			reason:  "An empty value restores the default, and the Secret says so.",
			objects: []client.Object{makeSetting(workerv1.SettingImagePullPolicy, "")},
			name:    workerv1.SettingImagePullPolicy,
			want: want{Status: workerv1.SettingStatus{Value: "IfNotPresent", Default: "IfNotPresent",
				Description: "pull policy of built-in images", Editable: true},
				Secret: map[string]string{workerv1.SettingImagePullPolicy: "IfNotPresent"}},
		},
		"OtherSecretKeysKept": {
			reason: "Only this Setting's key of the Secret changes; an administrator's other keys stay.",
			objects: []client.Object{makeSecret(map[string]string{aware: "false", "node-management-manual": "true"}),
				makeSetting(aware, "true")},
			name: aware,
			want: want{Status: workerv1.SettingStatus{Value: "true", Default: "false", Description: awareDesc, Editable: true},
				Secret: map[string]string{aware: "true", "node-management-manual": "true"}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			suite.Create(t, tc.objects...)
			t.Cleanup(func() { _ = suite.Client.Delete(context.Background(), makeSecret(nil)) })
			c, writes := testenv.CountWrites(suite.Client)
			r := &setting.Reconciler{Client: c}
			req := reconcile.Request{NamespacedName: client.ObjectKey{Namespace: workerv1.SystemNamespace, Name: tc.name}}
			ctx := context.Background()
			if _, err := r.Reconcile(ctx, req); err != nil {
				t.Fatalf("%s\nReconcile(...): %v", tc.reason, err)
			}
			s := &workerv1.Setting{}
			secret := &corev1.Secret{}
			if err := suite.Client.Get(ctx, req.NamespacedName, s); err != nil {
				t.Fatal(err)
			}
			if err := suite.Client.Get(ctx, client.ObjectKeyFromObject(makeSecret(nil)), secret); err != nil {
				t.Fatal(err)
			}
			got := want{Status: s.Status, Secret: map[string]string{}}
			for k, v := range secret.Data {
				got.Secret[k] = string(v)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nReconcile(...): -want, +got:\n%s", tc.reason, diff)
			}
			writes.Reset()
			if _, err := r.Reconcile(ctx, req); err != nil {
				t.Fatal(err)
			}
			if w := writes.List(); len(w) > 0 {
				t.Errorf("%s\na second Reconcile(...) wrote %v, want nothing", tc.reason, w)
			}
		})
	}
}

// TestReconcileGone checks that a Setting deleted before its reconcile is no error and writes nothing.
func TestReconcileGone(t *testing.T) {
	suite.Skip(t)
	c, writes := testenv.CountWrites(suite.Client)
	r := &setting.Reconciler{Client: c}
	req := reconcile.Request{NamespacedName: client.ObjectKey{Namespace: workerv1.SystemNamespace, Name: "container-registry"}}
	if _, err := r.Reconcile(context.Background(), req); err != nil {
		t.Errorf("Reconcile(gone): %v, want no error", err)
	}
	if w := writes.List(); len(w) > 0 {
		t.Errorf("Reconcile(gone) wrote %v, want nothing", w)
	}
}
