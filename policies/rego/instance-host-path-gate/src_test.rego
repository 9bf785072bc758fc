package gpustack.instance_host_path_gate_test

import data.gpustack.instance_host_path_gate
import data.lib.testing as t

volume := {"mountPath": "/mnt/host-cache", "hostPath": {"path": "/var/lib/gpustack-cache"}}

test_denied_while_off if {
	instance_host_path_gate.violation == {{"msg": "spec.additionalVolumes[0].hostPath: Forbidden: host path volumes are not allowed: enable the \"instance-host-path-volume-allowed\" setting to allow it"}} with input.review as t.instance({"additionalVolumes": [volume]})
		with data.inventory as t.settings({})
}

test_same_value_kept if {
	count(instance_host_path_gate.violation) == 0 with input.review as t.update({"additionalVolumes": [volume]}, {"additionalVolumes": [volume]})
		with data.inventory as t.settings({})
}

test_allowed_while_on if {
	count(instance_host_path_gate.violation) == 0 with input.review as t.instance({"additionalVolumes": [volume]})
		with data.inventory as t.settings({"instance-host-path-volume-allowed": "true"})
}
