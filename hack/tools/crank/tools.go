// Package tools pins the Crossplane CLI (crank), whose `xpkg build` builds the project's packages. v2.2.1 is
// the newest release whose module still holds the CLI: from v2.3 on it lives in github.com/crossplane/cli,
// which the Go module proxy does not serve here.
package tools

import _ "github.com/crossplane/crossplane/v2/cmd/crank"
