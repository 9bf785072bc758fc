package deviceplugin

import (
	"path/filepath"
	"strings"

	"github.com/BurntSushi/toml"
)

// EnvContainerdConfigDir names the variable that says where the node's containerd configuration is.
const EnvContainerdConfigDir = "GPUSTACK_CONTAINERD_CONFIG_DIR"

// DefaultContainerdConfigDir is where containerd reads its configuration (config.toml) by default.
const DefaultContainerdConfigDir = "/etc/containerd"

// containerdCDI is what the node's containerd says of CDI: whether its CRI plugin resolves CDI devices
// (enable_cdi) and where it reads the specs from (cdi_spec_dirs).
type containerdCDI struct {
	enabled  bool
	specDirs []string
}

// readContainerdCDI reads config.toml in dir under root, and the files it imports, as containerd merges them
// (a later file's setting wins). Without a configuration containerd's defaults hold: CDI on (containerd 2
// turned it on by default), specs in CDISpecDirs. A version 2 configuration (containerd 1.7) has CDI off unless
// it says enable_cdi = true. A file that cannot be read or parsed is skipped, as if it said nothing.
func readContainerdCDI(root, dir string) containerdCDI {
	out := containerdCDI{enabled: true, specDirs: CDISpecDirs}
	main := filepath.Join(dir, "config.toml")
	var cfg map[string]any
	if _, err := toml.DecodeFile(filepath.Join(root, main), &cfg); err != nil {
		return out
	}
	if v, ok := cfg["version"].(int64); ok && v < 3 {
		out.enabled = false
	}
	files := []map[string]any{cfg}
	imports, _ := cfg["imports"].([]any)
	for _, i := range imports {
		pattern, _ := i.(string)
		if !filepath.IsAbs(pattern) {
			pattern = filepath.Join(dir, pattern)
		}
		matches, _ := filepath.Glob(filepath.Join(root, pattern))
		for _, m := range matches {
			var imported map[string]any
			if _, err := toml.DecodeFile(m, &imported); err == nil {
				files = append(files, imported)
			}
		}
	}
	for _, f := range files {
		plugins, _ := f["plugins"].(map[string]any)
		for name, p := range plugins {
			settings, _ := p.(map[string]any)
			if !strings.Contains(name, ".cri") {
				continue
			}
			if v, ok := settings["enable_cdi"].(bool); ok {
				out.enabled = v
			}
			if dirs, ok := settings["cdi_spec_dirs"].([]any); ok {
				out.specDirs = nil
				for _, d := range dirs {
					if s, ok := d.(string); ok {
						out.specDirs = append(out.specDirs, s)
					}
				}
			}
		}
	}
	return out
}

// containerdConfigDir is EnvContainerdConfigDir through getenv, or its default.
func containerdConfigDir(getenv func(string) string) string {
	if dir := strings.TrimSpace(getenv(EnvContainerdConfigDir)); dir != "" {
		return dir
	}
	return DefaultContainerdConfigDir
}
