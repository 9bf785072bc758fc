package realnode

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// components are the node's own processes (containerd, the kubelet, kube-proxy), which the supervisor starts
// and stops; their containers are containerd's.
type components struct {
	cfg Config
	// exited reports a component that exited on its own: the node fails.
	exited chan error

	mu sync.Mutex
	// running are the components started and not yet seen to exit, by name.
	running map[string]*exec.Cmd
	// stopping are the components the supervisor stops itself: their exits end nothing, and each is
	// reported on its channel.
	stopping map[string]chan struct{}
}

func newComponents(cfg Config) *components {
	return &components{cfg: cfg, exited: make(chan error, 3), running: map[string]*exec.Cmd{}, stopping: map[string]chan struct{}{}}
}

// start starts a component, its output appended to Dir/<name>.log.
func (c *components) start(name string, argv ...string) error {
	cmd := exec.Command(argv[0], argv[1:]...)
	log, err := os.OpenFile(filepath.Join(c.cfg.Dir, name+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return errors.Wrapf(err, "cannot open the log of %s", name)
	}
	cmd.Stdout, cmd.Stderr = log, log
	cmd.Env = os.Environ()
	if err := cmd.Start(); err != nil {
		_ = log.Close()
		return errors.Wrapf(err, "cannot start %s", name)
	}
	c.mu.Lock()
	c.running[name] = cmd
	c.mu.Unlock()
	go func() {
		err := cmd.Wait()
		_ = log.Close()
		c.mu.Lock()
		delete(c.running, name)
		done, expected := c.stopping[name]
		delete(c.stopping, name)
		c.mu.Unlock()
		if expected {
			close(done)
			return
		}
		c.exited <- errors.Errorf("%s exited: %v; its log (%s) ends with:\n%s", name, err, log.Name(), lastLines(log.Name(), 8))
	}()
	return nil
}

// expect marks the named components as stopped by the supervisor and returns a channel for each that is
// closed once it has exited.
func (c *components) expect(names ...string) []chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []chan struct{}
	for _, n := range names {
		if _, ok := c.running[n]; !ok {
			continue
		}
		done := make(chan struct{})
		c.stopping[n] = done
		out = append(out, done)
	}
	return out
}

// stop sends sig to the named components and waits until they have exited: SIGKILL as a crash would,
// SIGTERM as a shutdown does.
func (c *components) stop(sig syscall.Signal, names ...string) {
	waits := c.expect(names...)
	c.mu.Lock()
	for _, n := range names {
		if cmd, ok := c.running[n]; ok {
			_ = cmd.Process.Signal(sig)
		}
	}
	c.mu.Unlock()
	for _, w := range waits {
		<-w
	}
}

// terminate stops every component (SIGTERM), the last started first, and waits for them.
func (c *components) terminate() {
	for _, n := range slices.Backward(componentOrder) {
		c.stop(syscall.SIGTERM, n)
	}
}

// boot starts containerd, imports the node's images when asked, then starts the kubelet and kube-proxy.
func (c *components) boot(ctx context.Context, importImages bool) error {
	if err := c.start("containerd", "containerd", "--config", filepath.Join(c.cfg.Dir, "containerd.toml")); err != nil {
		return err
	}
	if err := waitForSocket(ctx, "/run/containerd/containerd.sock", c.exited); err != nil {
		return err
	}
	// The images are imported but not unpacked: containerd's CRI unpacks an image into the snapshotter when a
	// container first needs it, so a node pays only for the images its Pods run (most run three or four of ten).
	// A node that boots again has them on its disk.
	images := c.cfg.Images
	if !importImages {
		images = nil
	}
	for _, img := range images {
		out, err := exec.CommandContext(ctx, "ctr", "--address", "/run/containerd/containerd.sock", "--namespace", "k8s.io",
			"images", "import", "--no-unpack", img).CombinedOutput()
		if err != nil {
			return errors.Wrapf(err, "cannot import image %s: %s", img, out)
		}
	}
	if err := c.startKubelet(); err != nil {
		return err
	}
	return c.start("kube-proxy", c.cfg.KubeProxy, "--config", filepath.Join(c.cfg.Dir, "kube-proxy.yaml"), "--v=2")
}

func (c *components) startKubelet() error {
	return c.start("kubelet", c.cfg.Kubelet, "--config", filepath.Join(c.cfg.Dir, "kubelet.yaml"),
		"--kubeconfig", c.cfg.Kubeconfig, "--hostname-override", c.cfg.Name, "--node-ip", NodeIP(c.cfg.Index),
		"--node-labels", labelFlag(c.cfg.Labels), "--v=2")
}

// componentOrder is the order boot starts the components in.
var componentOrder = []string{"containerd", "kubelet", "kube-proxy"}

// reboot power-cycles the node: every process of it but the supervisor is killed at once (containerd, the
// kubelet, kube-proxy, the shims and every container), what lives in memory on a real machine is lost (the
// mounts the kubelet and containerd made, containerd's state and the Pods' network namespaces under /run),
// what lives on its disk stays (the kubelet's and containerd's directories, the images), and the node boots.
func (c *components) reboot(ctx context.Context) error {
	waits := c.expect(componentOrder...)
	hs, err := hierarchies("/proc/self/mountinfo")
	if err != nil {
		return err
	}
	dirs := make([]string, 0, len(hs))
	for _, h := range hs {
		// Inside the node's cgroup namespace each hierarchy's root is the node's own cgroup.
		dirs = append(dirs, h.Dir)
	}
	if err := killCgroups(dirs, 30*time.Second); err != nil {
		return errors.Wrap(err, "cannot power off the node")
	}
	for _, w := range waits {
		<-w
	}
	if err := unmountBelow(statePaths); err != nil {
		return err
	}
	for _, volatile := range []string{"/run/containerd", "/run/netns"} {
		if err := clearDir(volatile); err != nil {
			return err
		}
	}
	return c.boot(ctx, false)
}

// unmountBelow unmounts every mount strictly below the given paths (not the paths' own mounts), deepest first.
func unmountBelow(paths []string) error {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return errors.Wrap(err, "cannot read the node's mounts")
	}
	defer func() { _ = f.Close() }()
	var below []string
	s := bufio.NewScanner(f)
	for s.Scan() {
		fields := strings.Fields(s.Text())
		if len(fields) < 5 {
			continue
		}
		point := fields[4]
		if slices.ContainsFunc(paths, func(p string) bool { return strings.HasPrefix(point, p+"/") }) {
			below = append(below, point)
		}
	}
	if err := s.Err(); err != nil {
		return errors.Wrap(err, "cannot read the node's mounts")
	}
	// The deepest first, so no mount is left under one that is gone.
	// A point mounted twice is listed twice, and each unmount takes the top one.
	slices.SortStableFunc(below, func(a, b string) int { return strings.Count(b, "/") - strings.Count(a, "/") })
	for _, p := range below {
		if err := syscall.Unmount(p, syscall.MNT_DETACH); err != nil && !errors.Is(err, syscall.EINVAL) && !errors.Is(err, syscall.ENOENT) {
			return errors.Wrapf(err, "cannot unmount %s", p)
		}
	}
	return nil
}

// clearDir removes what a directory holds, keeping the directory.
func clearDir(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return errors.Wrapf(err, "cannot read %s", dir)
	}
	for _, e := range entries {
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			return errors.Wrapf(err, "cannot clear %s", dir)
		}
	}
	return nil
}
