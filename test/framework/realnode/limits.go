package realnode

import (
	"os"
	"strconv"
	"strings"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// inotifyInstances is the kernel's limit of inotify instances one user holds. Every node's processes run as
// root, so all the nodes on this machine share it: Debian's default, 128, is spent by a dozen nodes.
const inotifyInstances = "/proc/sys/fs/inotify/max_user_instances"

const (
	// instancesPerNode is what one node opens, with room to spare: measured on the nine vendors' cluster, its
	// kubelet holds 6 (cAdvisor, the device plugins' and the static Pods' directories, certificates), its
	// containerd, kube-proxy and NFD's worker one each.
	instancesPerNode = 16
	// instancesBase is what the control plane, the operator and the machine's own processes hold.
	instancesBase = 128
)

// RaiseInotifyLimit raises the machine's inotify instance limit to what nodes 1 to lastIndex need: a kubelet that
// cannot have one fails to start ("inotify_init: too many open files"), as kind's known issues tell of many
// nodes on one machine. Clusters that share the machine hold consecutive indexes, so the last index counts every
// node on it.
func RaiseInotifyLimit(lastIndex int) error {
	return raiseLimit(inotifyInstances, instancesBase+instancesPerNode*lastIndex)
}

// raiseLimit raises the kernel limit at path to want; a limit already as high is left as it is, never lowered.
func raiseLimit(path string, want int) error {
	raw, err := os.ReadFile(path)
	if err != nil {
		return errors.Wrapf(err, "cannot read the kernel limit %s", path)
	}
	have, err := strconv.Atoi(strings.TrimSpace(string(raw)))
	if err != nil {
		return errors.Wrapf(err, "cannot parse the kernel limit %s", path)
	}
	if have >= want {
		return nil
	}
	return errors.Wrapf(os.WriteFile(path, []byte(strconv.Itoa(want)), 0o644),
		"cannot raise the kernel limit %s from %d to the %d the nodes need", path, have, want)
}
