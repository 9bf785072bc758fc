//go:build tools

// Package tools pins the command this module builds.
package tools

import _ "github.com/open-policy-agent/gatekeeper/v3/cmd/gator"
