// Package envvar reads the GPUSTACK_* variables the commands take once at start: each through a getenv
// function (os.Getenv in the commands, a map in tests), each refusing a value it cannot read with an error
// that names the variable.
package envvar

import (
	"path/filepath"
	"strconv"
	"strings"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// Bool reads the boolean variable name: def when unset or blank, else true or false as strconv.ParseBool
// reads them.
func Bool(getenv func(string) string, name string, def bool) (bool, error) {
	v := strings.TrimSpace(getenv(name))
	if v == "" {
		return def, nil
	}
	on, err := strconv.ParseBool(v)
	if err != nil {
		return false, errors.Errorf("%s=%q: want true or false", name, v)
	}
	return on, nil
}

// AbsPath reads the variable name as an absolute directory: def when unset or blank, cleaned otherwise.
func AbsPath(getenv func(string) string, name, def string) (string, error) {
	v := strings.TrimSpace(getenv(name))
	if v == "" {
		return def, nil
	}
	if !filepath.IsAbs(v) {
		return "", errors.Errorf("%s=%q: want an absolute path", name, v)
	}
	return filepath.Clean(v), nil
}
