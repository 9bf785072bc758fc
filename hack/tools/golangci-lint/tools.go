//go:build tools

// Package tools pins the command this module builds.
package tools

import _ "github.com/golangci/golangci-lint/v2/cmd/golangci-lint"
