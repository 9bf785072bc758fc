package helm

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
	"github.com/gpustack/gpustack-operator/instancepod"
	"github.com/gpustack/gpustack-operator/providers"
	"github.com/gpustack/gpustack-operator/test/framework/testenv"
)

// slicedInstance follows Step 3 on real nodes with the walkthrough's sliced-demo, given an SSH key and port 22:
// its main container holds the card Allocate made visible and the slice's budget, with the enforcer the agent
// copied to the node preloaded into every process (the stand-in reports the budget it was given); and ssh from
// this machine through the Instance's Service reaches a shell in main, without a capability, that sees the same.
func slicedInstance(ctx context.Context, t *testing.T, kubeconfig string, cs kubernetes.Interface, kc client.Client, card providers.Device) {
	t.Helper()
	dir := t.TempDir()
	key := sshKey(t, dir)
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "sliced-demo-key"},
		StringData: map[string]string{"authorized_keys": key}}
	if _, err := cs.CoreV1().Secrets("default").Create(ctx, secret, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	inst := &workerv1.Instance{}
	data, err := os.ReadFile(testenv.Path("examples", "instances", "sliced-demo.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(data, inst); err != nil {
		t.Fatal(err)
	}
	inst.Spec.SSHPublicKey = secret.Name
	inst.Spec.Ports = []workerv1.InstancePort{{Name: "ssh", Port: 22}}
	if err := kc.Create(ctx, inst); err != nil {
		t.Fatal(err)
	}
	instanceReady(t, kubeconfig, "sliced-demo")

	budget := strconv.FormatInt(card.MemoryMiB*20/100, 10) + "m"
	want := []string{"NVIDIA_VISIBLE_DEVICES=" + card.UUID, "CUDA_DEVICE_MEMORY_LIMIT_0=" + budget, "CUDA_DEVICE_SM_LIMIT=100",
		"[gpustack enforcer stand-in] devices " + card.UUID + " memory " + budget + " cores 100%"}
	// The stand-in enforcer speaks at HAMi-core's debug level (on standard error, here one stream with the
	// variables); a dynamically linked env loads it.
	session := "env LIBCUDA_LOG_LEVEL=4 true 2>&1; env"
	out, err := testenv.Kubectl(kubeconfig, "exec", "sliced-demo", "-c", instancepod.MainContainer, "--", "sh", "-c", session)
	if err != nil {
		t.Fatal(err)
	}
	if missing := missingLines(out, want); len(missing) > 0 {
		t.Errorf("kubectl exec sliced-demo -- env: want lines %q, got:\n%s", missing, out)
	}

	// ssh, trusting only the host key the worker keeps for the Instance.
	hostKeys, err := cs.CoreV1().Secrets("default").Get(ctx, instancepod.HostKeysSecretName(inst), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	svc, err := cs.CoreV1().Services("default").Get(ctx, "sliced-demo", metav1.GetOptions{})
	if err != nil || len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].NodePort == 0 {
		t.Fatalf("sliced-demo's Service exposes port 22 on a node port: %+v, %v", svc, err)
	}
	pod, err := cs.CoreV1().Pods("default").Get(ctx, "sliced-demo", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	knownHosts := filepath.Join(dir, "known_hosts")
	if err := os.WriteFile(knownHosts, []byte(fmt.Sprintf("[%s]:%d %s", pod.Status.HostIP, svc.Spec.Ports[0].NodePort,
		hostKeys.Data[instancepod.HostPublicKeyFile])), 0o600); err != nil {
		t.Fatal(err)
	}
	session += "; grep -E '^Cap(Eff|Bnd)' /proc/self/status; echo cwd=$(pwd)"
	var got string
	testenv.Eventually(t, time.Minute, func() (bool, string) {
		cmd := exec.CommandContext(ctx, "ssh", "-i", filepath.Join(dir, "id_ed25519"), "-o", "UserKnownHostsFile="+knownHosts,
			"-o", "StrictHostKeyChecking=yes", "-o", "BatchMode=yes", "-o", "ConnectTimeout=10",
			"-p", strconv.Itoa(int(svc.Spec.Ports[0].NodePort)), "root@"+pod.Status.HostIP, session) //nolint:gosec // the test's own command
		b, err := cmd.CombinedOutput()
		got = string(b)
		return err == nil, fmt.Sprintf("ssh: %v\n%s", err, b)
	})
	want = append(want, "CapEff:\t0000000000000000", "CapBnd:\t0000000000000000", "cwd="+workerv1.DefaultVolumeMount)
	if missing := missingLines(got, want); len(missing) > 0 {
		t.Errorf("ssh into sliced-demo: want lines %q, got:\n%s", missing, got)
	}
}

// pinnedInstance follows Step 6 on real nodes with the walkthrough's own pinned-demo: once hostPath volumes are
// allowed and its dataset volume and ConfigMap exist, it runs on node-t4-b with every mount, its dataset claim
// bound by the chart's provisioner on that node; nobody writes a PersistentVolume.
func pinnedInstance(ctx context.Context, t *testing.T, kubeconfig string, cs kubernetes.Interface, kc client.Client) {
	t.Helper()
	if out, err := testenv.Kubectl(kubeconfig, "-n", namespace, "patch", "setting", "instance-host-path-volume-allowed",
		"--type=merge", "-p", `{"spec":{"value":"true"}}`); err != nil {
		t.Fatal(err, out)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "model-config"},
		Data: map[string]string{"config.json": `{"model": "demo"}`}}
	if _, err := cs.CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	ipv := &workerv1.InstancePersistentVolume{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "datasets"},
		Spec: workerv1.InstancePersistentVolumeSpec{Capacity: resource.MustParse("1Gi"), AccessMode: workerv1.ReadWriteOnce}}
	if err := kc.Create(ctx, ipv); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, time.Minute, func() (bool, string) {
		out, err := testenv.Kubectl(kubeconfig, "apply", "-f", testenv.Path("examples", "instances", "pinned-demo.yaml"))
		return err == nil, fmt.Sprintf("pinned-demo once hostPath volumes are allowed: %v %s", err, out)
	})
	instanceReady(t, kubeconfig, "pinned-demo")
	out, err := testenv.Kubectl(kubeconfig, "-n", "default", "get", "instance", "pinned-demo", "-o", "jsonpath={.status.nodeName}")
	if err != nil || out != "node-t4-b" {
		t.Errorf("pinned-demo runs on %q (%v), want node-t4-b", out, err)
	}
	claim := &corev1.PersistentVolumeClaimList{}
	if err := kc.List(ctx, claim, client.InNamespace("default")); err != nil {
		t.Fatal(err)
	}
	for _, c := range claim.Items {
		pv, err := cs.CoreV1().PersistentVolumes().Get(ctx, c.Spec.VolumeName, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("claim %s: %v", c.Name, err)
		}
		if by := pv.Annotations["pv.kubernetes.io/provisioned-by"]; by != "rancher.io/local-path" || pv.Spec.NodeAffinity == nil ||
			!strings.Contains(pv.Spec.NodeAffinity.Required.String(), "node-t4-b") {
			t.Errorf("claim %s is bound to %s, provisioned by %q on %v; want the local-path provisioner's, on node-t4-b", c.Name, pv.Name, by, pv.Spec.NodeAffinity)
		}
	}
	out, err = testenv.Kubectl(kubeconfig, "exec", "pinned-demo", "-c", instancepod.MainContainer, "--", "sh", "-c",
		"echo kept > /mnt/datasets/file && cat /mnt/datasets/file /etc/model/config.json && test -d /mnt/host-cache && echo host-cache")
	if want := "kept\n{\"model\": \"demo\"}host-cache\n"; err != nil || out != want {
		t.Errorf("pinned-demo's mounts: %q (%v), want %q", out, err, want)
	}
}

// sshKey writes a new Ed25519 key pair to dir/id_ed25519 and returns its authorized_keys line.
func sshKey(t *testing.T, dir string) string {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	block, err := ssh.MarshalPrivateKey(priv, "test")
	if err != nil {
		t.Fatal(err)
	}
	sshPub, err := ssh.NewPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "id_ed25519"), pem.EncodeToMemory(block), 0o600); err != nil {
		t.Fatal(err)
	}
	return string(ssh.MarshalAuthorizedKey(sshPub))
}

// missingLines returns the lines of want that out does not hold.
func missingLines(out string, want []string) []string {
	have := map[string]bool{}
	for _, l := range strings.Split(out, "\n") {
		have[strings.TrimRight(l, "\r")] = true
	}
	var missing []string
	for _, w := range want {
		if !have[w] {
			missing = append(missing, w)
		}
	}
	return missing
}
