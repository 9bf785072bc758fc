# Rule 7: no accelerator on a native sidecar.
package gpustack.pod_sidecar_no_accelerator

import data.lib.accelerators as acc

sidecars := [sprintf("spec.initContainers[%d].resources.limits", [i]) |
	some i, c in object.get(acc.pod.spec, "initContainers", [])
	acc.restartable(c)
	some k, _ in acc.limits(c)
	acc.accelerator(k)
]

violation contains {"msg": msg} if {
	acc.judged
	path := sidecars[0]
	msg := sprintf("%s: Forbidden: a restartable init container (a native sidecar) may not request an accelerator; move the request to an app container", [path])
}
