package devicemanager

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"strings"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/gpustack/gpustack-operator/providers"
)

// EnvConfDir names the variable of the node's configuration directory of the device manager.
const EnvConfDir = "GPUSTACK_CONF_DIR"

// DefaultConfDir is the node's configuration directory when EnvConfDir is not set.
const DefaultConfDir = "/etc/gpustack"

// ExcludedDevicesFile is the file of the configuration directory that lists the cards of the node the device
// manager leaves out: one card UUID a line, "#" starting a comment.
const ExcludedDevicesFile = "excluded-devices"

// ExcludedDevicesPath is where the agent reads the node's excluded cards: the file in the node's configuration
// directory (EnvConfDir through getenv, DefaultConfDir when unset), seen through the node's root at root.
func ExcludedDevicesPath(getenv func(string) string, root string) string {
	dir := strings.TrimSpace(getenv(EnvConfDir))
	if dir == "" {
		dir = DefaultConfDir
	}
	return filepath.Join(root, dir, ExcludedDevicesFile)
}

// ParseExcludedDevices reads the card UUIDs of an excluded-devices file. A line that holds more than one word
// is an error naming it, as a line of two UUIDs or a UUID with a stray word would exclude nothing the
// administrator meant.
func ParseExcludedDevices(data []byte) (map[string]bool, error) {
	out := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line, _, _ := strings.Cut(sc.Text(), "#")
		words := strings.Fields(line)
		switch len(words) {
		case 0:
		case 1:
			out[words[0]] = true
		default:
			return nil, errors.Errorf("line %d holds %d words; want one card UUID a line", n, len(words))
		}
	}
	return out, errors.Wrap(sc.Err(), "cannot read the excluded cards")
}

// readExcluded reads the excluded cards from path: none when the file is not there.
func readExcluded(path string) (map[string]bool, error) {
	data, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return map[string]bool{}, nil
	}
	if err != nil {
		return nil, errors.Wrapf(err, "cannot read %s", path)
	}
	excluded, err := ParseExcludedDevices(data)
	return excluded, errors.Wrap(err, path)
}

// withoutExcluded returns the cards that are not excluded, in their order.
func withoutExcluded(cards []providers.Device, excluded map[string]bool) []providers.Device {
	if len(excluded) == 0 {
		return cards
	}
	out := make([]providers.Device, 0, len(cards))
	for _, c := range cards {
		if !excluded[c.UUID] {
			out = append(out, c)
		}
	}
	return out
}
