// Package tools pins the Helm CLI.
package tools

import _ "helm.sh/helm/v3/cmd/helm"
