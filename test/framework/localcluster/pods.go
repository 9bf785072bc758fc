package localcluster

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// PodRunner runs the Pods that KWOK only pretends to run, as a kubelet would with a container runtime, for the
// images built here (the images map: the operator's, Kueue's, nfd-master's). Each Pod's first container runs
// as a process in a mount namespace of its own, whose root is an overlay of this machine's (what it writes
// stays in the Pod) with a fresh /tmp and its volumes bind-mounted at their mount paths: emptyDir, ConfigMap,
// Secret and the projected service-account token, namespace and CA, which with KUBERNETES_SERVICE_HOST and
// _PORT give it the in-cluster configuration of the Pod's service account. ConfigMap and Secret volumes follow
// their objects, as a kubelet's do. It stops the process when the Pod goes, and starts it again a second after
// it ends while the Pod stays (restartPolicy Always: during a rolling update the new Pod's process finds the
// old one's ports taken until that one is stopped); when a Job's process ends, it reports the Pod Succeeded or
// Failed with the exit code (with Config.KeepJobsRunning, KWOK leaves that to it). Pods share this machine's
// network: the chart's ports are set apart where two would meet (chartValues).
type PodRunner struct {
	cs  kubernetes.Interface
	cfg *rest.Config
	// images maps an image repository (the reference without its tag), or a repository and a command, to the
	// binary that runs it.
	images map[string]string
	dir    string
	logf   func(format string, args ...any)

	mu      sync.Mutex
	running map[types.UID]*container
}

// NewPodRunner returns a PodRunner of the cluster cfg reaches, keeping its Pods' files under dir; images maps
// "repository" or "repository command" to the binary that runs it (see binary), and logf says what went wrong
// with a Pod.
func NewPodRunner(cfg *rest.Config, dir string, images map[string]string, logf func(format string, args ...any)) (*PodRunner, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, errors.Wrap(err, "cannot create client")
	}
	return &PodRunner{cs: cs, cfg: cfg, dir: dir, images: images, logf: logf}, nil
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
	// volumes are the Pod's ConfigMap, Secret and projected volumes, kept in step with their objects.
	volumes []volume
}

// volume is one of a Pod's volumes written out as files.
type volume struct {
	spec corev1.Volume
	dir  string
}

// binary returns the binary that runs a container, or "" for one this kubelet does not run: images maps
// "repository command" where one image holds several commands (NFD's), the repository alone otherwise.
func (k *PodRunner) binary(c corev1.Container) string {
	repository, _, ok := strings.Cut(c.Image, ":")
	if !ok {
		return ""
	}
	if len(c.Command) > 0 {
		if b, ok := k.images[repository+" "+c.Command[0]]; ok {
			return b
		}
	}
	return k.images[repository]
}

// Run runs the namespaces' Pods until ctx ends, then stops every process it started.
func (k *PodRunner) Run(ctx context.Context, namespaces ...string) {
	k.running = map[types.UID]*container{}
	for {
		var all []corev1.Pod
		for _, ns := range namespaces {
			if pods, err := k.cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{}); err == nil {
				all = append(all, pods.Items...)
			}
		}
		k.sync(ctx, all)
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

func (k *PodRunner) sync(ctx context.Context, pods []corev1.Pod) {
	k.mu.Lock()
	defer k.mu.Unlock()
	present := map[types.UID]bool{}
	for i := range pods {
		p := &pods[i]
		if p.DeletionTimestamp != nil || p.Spec.NodeName == "" || len(p.Spec.Containers) == 0 || k.binary(p.Spec.Containers[0]) == "" {
			continue
		}
		present[p.UID] = true
		if c := k.running[p.UID]; c != nil && (c.job || !c.exitedSince(time.Second)) {
			for _, v := range c.volumes {
				if err := k.writeVolume(ctx, p, v); err != nil && ctx.Err() == nil {
					k.logf("cannot update volume %s of pod %s: %v", v.spec.Name, p.Name, err)
				}
			}
			continue
		}
		c, err := k.start(ctx, p)
		if err != nil {
			k.logf("cannot run pod %s: %v", p.Name, err)
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

// podScript makes the Pod's filesystem in its new mount namespace and runs the container in it: $1 is the
// Pod's directory, $2 a file of "source target" lines to bind-mount, $3 the binary, the rest its arguments.
// The binary is bind-mounted at /localcluster/bin/ as an image's entrypoint would be: its own path may be
// hidden in the Pod (under the fresh /tmp, when the checkout lives there).
const podScript = `set -e
pod=$1 binds=$2 binary=$3; shift 3
root=$pod/rootfs layers=$pod/layers
mkdir -p $root $layers
mount -t tmpfs tmpfs $layers
mkdir $layers/upper $layers/work
mount -t overlay overlay -o lowerdir=/,upperdir=$layers/upper,workdir=$layers/work $root
for m in /proc /sys /dev; do mount --rbind $m $root$m; done
mount -t tmpfs tmpfs $root/tmp
while read -r source target; do
	# Resolved inside the new root: /var/run is a link to /run there as here.
	if [ -d "$source" ]; then chroot $root mkdir -p "$target"; else chroot $root mkdir -p "$(dirname "$target")"; chroot $root touch "$target"; fi
	mount --bind "$source" "$root$(chroot $root realpath "$target")"
done < $binds
entrypoint=/localcluster/bin/$(basename "$binary")
mkdir -p $root/localcluster/bin
touch $root$entrypoint
mount --bind "$binary" $root$entrypoint
cd $root
exec chroot . $entrypoint "$@"
`

// start runs a Pod's first container.
func (k *PodRunner) start(ctx context.Context, p *corev1.Pod) (*container, error) {
	root := filepath.Join(k.dir, p.Name)
	if err := os.MkdirAll(root, 0o755); err != nil {
		return nil, err
	}
	spec := p.Spec.Containers[0]
	c := &container{pod: p.Name, log: filepath.Join(root, "log"), done: make(chan struct{}),
		job: len(p.OwnerReferences) > 0 && p.OwnerReferences[0].Kind == "Job"}
	var binds strings.Builder
	for _, m := range spec.VolumeMounts {
		i := slices.IndexFunc(p.Spec.Volumes, func(v corev1.Volume) bool { return v.Name == m.Name })
		if i < 0 {
			return nil, errors.Errorf("volume %s of mount %s is not in the Pod", m.Name, m.MountPath)
		}
		v := volume{spec: p.Spec.Volumes[i], dir: filepath.Join(root, "volumes", m.Name)}
		if err := os.MkdirAll(v.dir, 0o755); err != nil {
			return nil, err
		}
		if v.spec.EmptyDir == nil {
			if err := k.writeVolume(ctx, p, v); err != nil {
				return nil, errors.Wrapf(err, "cannot write volume %s", m.Name)
			}
			c.volumes = append(c.volumes, v)
		}
		fmt.Fprintf(&binds, "%s %s\n", filepath.Join(v.dir, m.SubPath), m.MountPath)
	}
	bindsFile := filepath.Join(root, "binds")
	if err := os.WriteFile(bindsFile, []byte(binds.String()), 0o644); err != nil {
		return nil, err
	}
	host, port, _ := strings.Cut(strings.TrimPrefix(k.cfg.Host, "https://"), ":")
	env := []string{"PATH=" + os.Getenv("PATH"), "KUBERNETES_SERVICE_HOST=" + host, "KUBERNETES_SERVICE_PORT=" + port}
	for _, e := range spec.Env {
		switch {
		case e.ValueFrom != nil && e.ValueFrom.FieldRef != nil:
			field := map[string]string{"metadata.namespace": p.Namespace, "metadata.name": p.Name, "spec.nodeName": p.Spec.NodeName}
			env = append(env, e.Name+"="+field[e.ValueFrom.FieldRef.FieldPath])
		case e.ValueFrom == nil:
			env = append(env, e.Name+"="+e.Value)
		}
	}
	log, err := os.OpenFile(c.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	// The image's entrypoint is the binary built here; the container's command names the image's own path
	// to it, so only its arguments are kept.
	args := append([]string{"--mount", "--propagation", "private", "sh", "-c", podScript, "pod", root, bindsFile,
		k.binary(spec)}, spec.Args...)
	c.cmd = exec.Command("unshare", args...)
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

// writeVolume writes a ConfigMap, Secret or projected volume's files into its directory, each only when it
// changed, and atomically (renamed into place), as a kubelet keeps them.
func (k *PodRunner) writeVolume(ctx context.Context, p *corev1.Pod, v volume) error {
	files := map[string][]byte{}
	var err error
	switch src := v.spec.VolumeSource; {
	case src.ConfigMap != nil:
		err = k.configMapFiles(ctx, files, p.Namespace, src.ConfigMap.Name, src.ConfigMap.Items, ptrBool(src.ConfigMap.Optional))
	case src.Secret != nil:
		err = k.secretFiles(ctx, files, p.Namespace, src.Secret.SecretName, src.Secret.Items, ptrBool(src.Secret.Optional))
	case src.Projected != nil:
		for _, s := range src.Projected.Sources {
			if err = k.projectedFiles(ctx, files, p, v.dir, s); err != nil {
				break
			}
		}
	default:
		err = errors.Errorf("volume %s: only emptyDir, configMap, secret and projected volumes run here", v.spec.Name)
	}
	if err != nil {
		return err
	}
	return writeFiles(v.dir, files)
}

// projectedFiles adds one source of a projected volume to files. The service account's token is asked for
// again once the one written is 45 minutes old (it lasts an hour), as a kubelet renews it before it expires.
func (k *PodRunner) projectedFiles(ctx context.Context, files map[string][]byte, p *corev1.Pod, dir string, s corev1.VolumeProjection) error {
	switch {
	case s.ConfigMap != nil:
		return k.configMapFiles(ctx, files, p.Namespace, s.ConfigMap.Name, s.ConfigMap.Items, ptrBool(s.ConfigMap.Optional))
	case s.Secret != nil:
		return k.secretFiles(ctx, files, p.Namespace, s.Secret.Name, s.Secret.Items, ptrBool(s.Secret.Optional))
	case s.DownwardAPI != nil:
		for _, f := range s.DownwardAPI.Items {
			if f.FieldRef != nil && f.FieldRef.FieldPath == "metadata.namespace" {
				files[f.Path] = []byte(p.Namespace)
			}
		}
	case s.ServiceAccountToken != nil:
		if fi, err := os.Stat(filepath.Join(dir, s.ServiceAccountToken.Path)); err == nil && time.Since(fi.ModTime()) < 45*time.Minute {
			return nil
		}
		tr, err := k.cs.CoreV1().ServiceAccounts(p.Namespace).CreateToken(ctx, p.Spec.ServiceAccountName,
			&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptrInt64(3600)}}, metav1.CreateOptions{})
		if err != nil {
			return errors.Wrapf(err, "cannot get a token for service account %s", p.Spec.ServiceAccountName)
		}
		files[s.ServiceAccountToken.Path] = []byte(tr.Status.Token)
	}
	return nil
}

// configMapFiles adds a ConfigMap's keys to files (project).
func (k *PodRunner) configMapFiles(ctx context.Context, files map[string][]byte, namespace, name string, items []corev1.KeyToPath, optional bool) error {
	cm, err := k.cs.CoreV1().ConfigMaps(namespace).Get(ctx, name, metav1.GetOptions{})
	if optional && apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return errors.Wrapf(err, "cannot get ConfigMap %s", name)
	}
	data := map[string][]byte{}
	for key, value := range cm.Data {
		data[key] = []byte(value)
	}
	maps.Copy(data, cm.BinaryData)
	project(files, data, items)
	return nil
}

// secretFiles adds a Secret's keys to files (project).
func (k *PodRunner) secretFiles(ctx context.Context, files map[string][]byte, namespace, name string, items []corev1.KeyToPath, optional bool) error {
	s, err := k.cs.CoreV1().Secrets(namespace).Get(ctx, name, metav1.GetOptions{})
	if optional && apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return errors.Wrapf(err, "cannot get Secret %s", name)
	}
	project(files, s.Data, items)
	return nil
}

// writeFiles writes each file under dir that differs from what is there, renamed into place.
func writeFiles(dir string, files map[string][]byte) error {
	for path, data := range files {
		target := filepath.Join(dir, path)
		if old, err := os.ReadFile(target); err == nil && bytes.Equal(old, data) {
			continue
		}
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			return errors.Wrap(err, "cannot create a volume's directory")
		}
		if err := os.WriteFile(target+".new", data, 0o644); err != nil {
			return errors.Wrap(err, "cannot write a volume's file")
		}
		if err := os.Rename(target+".new", target); err != nil {
			return errors.Wrap(err, "cannot write a volume's file")
		}
	}
	return nil
}

// project adds a ConfigMap's or Secret's keys to files: those items name, at their paths, or every key.
func project(files, data map[string][]byte, items []corev1.KeyToPath) {
	if len(items) == 0 {
		maps.Copy(files, data)
		return
	}
	for _, item := range items {
		if value, ok := data[item.Key]; ok {
			files[item.Path] = value
		}
	}
}

func ptrBool(b *bool) bool { return b != nil && *b }

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
func (k *PodRunner) reportEnd(ctx context.Context, p *corev1.Pod, code int) {
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

// Finished waits until a Pod whose name starts with prefix has run and every such process has ended, and
// returns their logs; it fails if any of them failed, so a retry cannot hide a first run's failure.
func (k *PodRunner) Finished(prefix string, timeout time.Duration) (string, error) {
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
			return k.Logs(), errors.Errorf("no pod named %s* ran to its end within %s", prefix, timeout)
		}
		time.Sleep(300 * time.Millisecond)
	}
}

// Logs returns the end of the output of every process started, for a failing test.
func (k *PodRunner) Logs() string {
	k.mu.Lock()
	defer k.mu.Unlock()
	var b strings.Builder
	for _, c := range k.running {
		data, _ := os.ReadFile(c.log)
		fmt.Fprintf(&b, "=== %s\n%s\n", c.pod, logLines(string(data), 40))
	}
	return b.String()
}

func ptrInt64(v int64) *int64 { return &v }

// logLines returns the last n lines of a log.
func logLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
