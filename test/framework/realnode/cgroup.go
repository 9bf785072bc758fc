package realnode

import (
	"bufio"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// cgroupRoot is where the machine mounts its cgroup hierarchies.
const cgroupRoot = "/sys/fs/cgroup"

// hierarchy is one mounted cgroup hierarchy: v1 with its controllers (or name=), or the v2 one.
type hierarchy struct {
	// Dir is where it is mounted, under cgroupRoot.
	Dir string `json:"dir"`
	// Type is cgroup or cgroup2.
	Type string `json:"type"`
	// Options are its mount options that name what it holds ("cpu", "name=systemd"), comma-separated.
	Options string `json:"options"`
}

// hierarchies reads the cgroup hierarchies mounted under cgroupRoot from a mountinfo file.
func hierarchies(mountinfo string) ([]hierarchy, error) {
	f, err := os.Open(mountinfo)
	if err != nil {
		return nil, errors.Wrap(err, "cannot read the mounts")
	}
	defer func() { _ = f.Close() }()
	var out []hierarchy
	s := bufio.NewScanner(f)
	for s.Scan() {
		// ID parent major:minor root mountpoint options [optional...] - fstype source superoptions
		pre, post, ok := strings.Cut(s.Text(), " - ")
		fields, tail := strings.Fields(pre), strings.Fields(post)
		if !ok || len(fields) < 5 || len(tail) < 3 || !strings.HasPrefix(fields[4], cgroupRoot+"/") {
			continue
		}
		if tail[0] != "cgroup" && tail[0] != "cgroup2" {
			continue
		}
		var opts []string
		for _, o := range strings.Split(tail[2], ",") {
			if o != "rw" && o != "ro" {
				opts = append(opts, o)
			}
		}
		out = append(out, hierarchy{Dir: fields[4], Type: tail[0], Options: strings.Join(opts, ",")})
	}
	return out, errors.Wrap(s.Err(), "cannot read the mounts")
}

// ownCgroups returns, by hierarchy directory, the cgroup this process is in (the paths of /proc/self/cgroup).
func ownCgroups(hs []hierarchy) (map[string]string, error) {
	data, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return nil, errors.Wrap(err, "cannot read this process's cgroups")
	}
	byControllers := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) == 3 {
			byControllers[parts[1]] = parts[2]
		}
	}
	out := map[string]string{}
	for _, h := range hs {
		key := ""
		if h.Type == "cgroup" {
			key = v1Controllers(h.Options)
		}
		p, ok := byControllers[key]
		if !ok {
			return nil, errors.Errorf("this process is in no cgroup of the hierarchy at %s", h.Dir)
		}
		out[h.Dir] = p
	}
	return out, nil
}

// v1Controllers is how /proc/self/cgroup names a v1 hierarchy: its controllers and name=, comma-separated,
// in the order its mount options give them.
func v1Controllers(options string) string {
	var names []string
	for _, o := range strings.Split(options, ",") {
		if knownController(o) || strings.HasPrefix(o, "name=") {
			names = append(names, o)
		}
	}
	return strings.Join(names, ",")
}

func knownController(o string) bool {
	return slices.Contains([]string{"cpu", "cpuacct", "cpuset", "memory", "devices", "freezer", "net_cls",
		"net_prio", "blkio", "perf_event", "hugetlb", "pids", "rdma", "misc"}, o)
}

// enterCgroups makes a cgroup called name under this process's own in every hierarchy and moves this process
// into it; it returns the cgroups' directories. Everything the node starts lives below them, so StopNode finds
// every process of the node there, containers included.
func enterCgroups(hs []hierarchy, name string) ([]string, error) {
	own, err := ownCgroups(hs)
	if err != nil {
		return nil, err
	}
	var dirs []string
	for _, h := range hs {
		parent := filepath.Join(h.Dir, own[h.Dir])
		dir := filepath.Join(parent, name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, errors.Wrapf(err, "cannot create cgroup %s", dir)
		}
		// A v1 cpuset cgroup takes no process before it has CPUs and memory nodes.
		if strings.Contains(","+h.Options+",", ",cpuset,") {
			for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
				v, err := os.ReadFile(filepath.Join(parent, f))
				if err != nil {
					return nil, errors.Wrap(err, "cannot read the parent cpuset")
				}
				if err := os.WriteFile(filepath.Join(dir, f), v, 0o644); err != nil {
					return nil, errors.Wrapf(err, "cannot set %s of %s", f, dir)
				}
			}
		}
		if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
			return nil, errors.Wrapf(err, "cannot enter cgroup %s", dir)
		}
		dirs = append(dirs, dir)
	}
	return dirs, nil
}

// killCgroups kills every process in the cgroups and those below them, until none is left or the timeout
// passes, then removes the cgroups, deepest first.
func killCgroups(dirs []string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		pids := cgroupProcs(dirs)
		if len(pids) == 0 {
			break
		}
		if time.Now().After(deadline) {
			return errors.Errorf("processes %v outlived their node", pids)
		}
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		time.Sleep(100 * time.Millisecond)
	}
	for _, d := range dirs {
		var tree []string
		_ = filepath.WalkDir(d, func(p string, e os.DirEntry, err error) error {
			if err == nil && e.IsDir() {
				tree = append(tree, p)
			}
			return nil
		})
		for i := len(tree) - 1; i >= 0; i-- {
			_ = os.Remove(tree[i])
		}
	}
	return nil
}

// cgroupProcs returns the processes in the cgroups and below them.
func cgroupProcs(dirs []string) []int {
	seen := map[int]bool{}
	for _, d := range dirs {
		_ = filepath.WalkDir(d, func(p string, e os.DirEntry, err error) error {
			if err != nil || e.IsDir() || e.Name() != "cgroup.procs" {
				return nil // a cgroup removed while walking is no error
			}
			data, _ := os.ReadFile(p)
			for _, f := range strings.Fields(string(data)) {
				if pid, err := strconv.Atoi(f); err == nil && pid != os.Getpid() {
					seen[pid] = true
				}
			}
			return nil
		})
	}
	out := make([]int, 0, len(seen))
	for pid := range seen {
		out = append(out, pid)
	}
	slices.Sort(out)
	return out
}

// ClearLeftovers stops whatever a node of this name left running when the run that started it died without
// stopping it (a test killed at its timeout): every process in its cgroups, which are then removed. It is a
// no-op when there are none.
func ClearLeftovers(name string) error {
	hs, err := hierarchies("/proc/self/mountinfo")
	if err != nil {
		return err
	}
	own, err := ownCgroups(hs)
	if err != nil {
		return err
	}
	var dirs []string
	for _, h := range hs {
		dir := filepath.Join(h.Dir, own[h.Dir], Namespace(name))
		if _, err := os.Stat(dir); err == nil {
			dirs = append(dirs, dir)
		}
	}
	return errors.Wrapf(killCgroups(dirs, 30*time.Second), "cannot stop what an earlier node %s left running", name)
}

// Freeze freezes (or thaws, frozen false) a container of the node whose configuration is in dir, as `docker
// pause` does: its processes keep their memory, connections and state but are not scheduled (a long garbage
// collection pause, a stalled machine). It finds the container's cgroup by its ID under the node's freezer
// cgroup and waits until the kernel reports the state reached.
func Freeze(dir, containerID string, frozen bool) error {
	data, err := os.ReadFile(filepath.Join(dir, "cgroups"))
	if err != nil {
		return errors.Wrap(err, "cannot read the node's cgroups: is it running?")
	}
	var found string
	for _, d := range strings.Fields(string(data)) {
		if !strings.HasPrefix(d, filepath.Join(cgroupRoot, "freezer")+"/") {
			continue
		}
		_ = filepath.WalkDir(d, func(p string, e os.DirEntry, err error) error {
			if err == nil && e.IsDir() && strings.HasSuffix(e.Name(), containerID) {
				found = p
				return filepath.SkipAll
			}
			return nil
		})
	}
	if found == "" {
		return errors.Errorf("container %s has no freezer cgroup on the node in %s", containerID, dir)
	}
	state := map[bool]string{true: "FROZEN", false: "THAWED"}[frozen]
	if err := os.WriteFile(filepath.Join(found, "freezer.state"), []byte(state), 0o644); err != nil {
		return errors.Wrapf(err, "cannot set container %s %s", containerID, state)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		got, err := os.ReadFile(filepath.Join(found, "freezer.state"))
		if err == nil && strings.TrimSpace(string(got)) == state {
			return nil
		}
		if time.Now().After(deadline) {
			return errors.Errorf("container %s is %q, not %s", containerID, strings.TrimSpace(string(got)), state)
		}
	}
}
