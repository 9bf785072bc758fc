package helm

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/gpustack/gpustack-operator/test/framework/testenv"
)

// kubelet runs the chart's Pods that KWOK only pretends to run: for every scheduled Pod of the operator's
// image (any tag) it starts the operator binary built here with the container's arguments and environment, as
// the Pod's service account, with each emptyDir volume a fresh directory. It stops the process when the Pod
// goes, and starts it again a second after it ends while the Pod stays (restartPolicy Always: during a
// rolling update the new Pod's process finds the old one's ports taken until that one is stopped); when a
// Job's process ends, it reports the Pod Succeeded or Failed with the exit code, as a kubelet does (the local
// cluster runs with KeepJobsRunning, so KWOK leaves that to it).
type kubelet struct {
	cs     kubernetes.Interface
	cfg    *rest.Config
	binary string
	// repository is the operator image's, without a tag.
	repository string
	dir        string
	mu         sync.Mutex
	running    map[types.UID]*container
}

// container is one started process.
type container struct {
	pod  string
	job  bool
	cmd  *exec.Cmd
	log  string
	done chan struct{}
	err  error
	// ended is when the process ended; set before done is closed.
	ended time.Time
}

// run watches the namespace's Pods until ctx ends, then stops every process it started.
func (k *kubelet) run(ctx context.Context, t *testing.T, namespace string) {
	k.running = map[types.UID]*container{}
	for {
		pods, err := k.cs.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{})
		if err == nil {
			k.sync(ctx, t, pods.Items)
		}
		select {
		case <-ctx.Done():
			k.mu.Lock()
			for _, c := range k.running {
				_ = c.cmd.Process.Kill()
				<-c.done
			}
			k.mu.Unlock()
			return
		case <-time.After(300 * time.Millisecond):
		}
	}
}

func (k *kubelet) sync(ctx context.Context, t *testing.T, pods []corev1.Pod) {
	k.mu.Lock()
	defer k.mu.Unlock()
	present := map[types.UID]bool{}
	for i := range pods {
		p := &pods[i]
		if p.DeletionTimestamp != nil || p.Spec.NodeName == "" || len(p.Spec.Containers) == 0 ||
			!strings.HasPrefix(p.Spec.Containers[0].Image, k.repository+":") {
			continue
		}
		present[p.UID] = true
		if c := k.running[p.UID]; c != nil && (c.job || !c.exitedSince(time.Second)) {
			continue
		}
		c, err := k.start(ctx, p)
		if err != nil {
			t.Errorf("cannot run pod %s: %v", p.Name, err)
			continue
		}
		k.running[p.UID] = c
	}
	for uid, c := range k.running {
		if !present[uid] && !c.job {
			_ = c.cmd.Process.Kill()
		}
	}
}

// start runs a Pod's first container.
func (k *kubelet) start(ctx context.Context, p *corev1.Pod) (*container, error) {
	root := filepath.Join(k.dir, p.Name)
	if err := os.MkdirAll(root, 0o755); err != nil {
		return nil, err
	}
	kubeconfig, err := k.credentials(ctx, p, filepath.Join(root, "kubeconfig"))
	if err != nil {
		return nil, err
	}
	spec := p.Spec.Containers[0]
	mounts := map[string]string{}
	for _, m := range spec.VolumeMounts {
		for _, v := range p.Spec.Volumes {
			if v.Name == m.Name && v.EmptyDir != nil {
				mounts[m.MountPath] = filepath.Join(root, "volumes", v.Name)
			}
		}
	}
	args := append([]string(nil), spec.Args...)
	for i := range args {
		for mount, dir := range mounts {
			args[i] = strings.ReplaceAll(args[i], mount, dir)
		}
	}
	env := []string{"PATH=" + os.Getenv("PATH")}
	for mount, dir := range mounts {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
		if mount == "/tmp" {
			env = append(env, "TMPDIR="+dir)
		}
	}
	for _, e := range spec.Env {
		switch {
		case e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.namespace":
			env = append(env, e.Name+"="+p.Namespace)
		case e.ValueFrom == nil:
			env = append(env, e.Name+"="+e.Value)
		}
	}
	c := &container{pod: p.Name, log: filepath.Join(root, "log"), done: make(chan struct{}),
		job: len(p.OwnerReferences) > 0 && p.OwnerReferences[0].Kind == "Job"}
	log, err := os.OpenFile(c.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	// The in-cluster configuration a kubelet mounts is given as a kubeconfig of the Pod's service account.
	c.cmd = exec.Command(k.binary, append(args, "--kubeconfig="+kubeconfig)...)
	c.cmd.Env, c.cmd.Stdout, c.cmd.Stderr = env, log, log
	if err := c.cmd.Start(); err != nil {
		log.Close()
		return nil, err
	}
	go func() {
		c.err = c.cmd.Wait()
		c.ended = time.Now()
		log.Close()
		if c.job {
			k.reportEnd(context.Background(), p, c.cmd.ProcessState.ExitCode())
		}
		close(c.done)
	}()
	return c, nil
}

// exitedSince reports whether the process ended at least d ago.
func (c *container) exitedSince(d time.Duration) bool {
	select {
	case <-c.done:
		return time.Since(c.ended) >= d
	default:
		return false
	}
}

// reportEnd sets the Pod's phase and its container's terminated state from the exit code.
func (k *kubelet) reportEnd(ctx context.Context, p *corev1.Pod, code int) {
	pod, err := k.cs.CoreV1().Pods(p.Namespace).Get(ctx, p.Name, metav1.GetOptions{})
	if err != nil {
		return
	}
	reason := "Completed"
	pod.Status.Phase = corev1.PodSucceeded
	if code != 0 {
		pod.Status.Phase, reason = corev1.PodFailed, "Error"
	}
	now := metav1.Now()
	pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: pod.Spec.Containers[0].Name, Image: pod.Spec.Containers[0].Image,
		State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: int32(code), Reason: reason, StartedAt: now, FinishedAt: now}}}}
	_, _ = k.cs.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, pod, metav1.UpdateOptions{})
}

// credentials writes a kubeconfig with a token of the Pod's service account.
func (k *kubelet) credentials(ctx context.Context, p *corev1.Pod, file string) (string, error) {
	tr, err := k.cs.CoreV1().ServiceAccounts(p.Namespace).CreateToken(ctx, p.Spec.ServiceAccountName,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptrInt64(3600)}}, metav1.CreateOptions{})
	if err != nil {
		return "", errors.Wrapf(err, "cannot get a token for service account %s", p.Spec.ServiceAccountName)
	}
	ca := k.cfg.CAData
	if len(ca) == 0 && k.cfg.CAFile != "" {
		if ca, err = os.ReadFile(k.cfg.CAFile); err != nil {
			return "", err
		}
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["cluster"] = &clientcmdapi.Cluster{Server: k.cfg.Host, CertificateAuthorityData: ca}
	cfg.AuthInfos["pod"] = &clientcmdapi.AuthInfo{Token: tr.Status.Token}
	cfg.Contexts["pod"] = &clientcmdapi.Context{Cluster: "cluster", AuthInfo: "pod"}
	cfg.CurrentContext = "pod"
	return file, clientcmd.WriteToFile(*cfg, file)
}

// finished waits until a Pod whose name starts with prefix has run and every such process has ended, and
// returns their logs; it fails if any of them failed, so a retry cannot hide a first run's failure.
func (k *kubelet) finished(prefix string, timeout time.Duration) (string, error) {
	deadline := time.Now().Add(timeout)
	for {
		k.mu.Lock()
		var found []*container
		for _, c := range k.running {
			if strings.HasPrefix(c.pod, prefix) {
				found = append(found, c)
			}
		}
		k.mu.Unlock()
		ended := len(found) > 0
		for _, c := range found {
			select {
			case <-c.done:
			default:
				ended = false
			}
		}
		if ended {
			var logs strings.Builder
			var failed error
			for _, c := range found {
				data, _ := os.ReadFile(c.log)
				fmt.Fprintf(&logs, "=== %s\n%s", c.pod, data)
				if c.err != nil && failed == nil {
					failed = errors.Wrapf(c.err, "pod %s", c.pod)
				}
			}
			return logs.String(), failed
		}
		if time.Now().After(deadline) {
			return k.logs(), errors.Errorf("no pod named %s* ran to its end within %s", prefix, timeout)
		}
		time.Sleep(300 * time.Millisecond)
	}
}

// logs returns the output of every process started, for a failing test.
func (k *kubelet) logs() string {
	k.mu.Lock()
	defer k.mu.Unlock()
	var b strings.Builder
	for _, c := range k.running {
		data, _ := os.ReadFile(c.log)
		fmt.Fprintf(&b, "=== %s\n%s\n", c.pod, testenv.LastLines(string(data), 40))
	}
	return b.String()
}

func ptrInt64(v int64) *int64 { return &v }
