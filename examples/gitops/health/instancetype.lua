-- Argo CD health of a worker.gpustack.ai InstanceType, read from the phase the operator writes.
hs = {}
if obj.status == nil or obj.status.phase == nil then
  hs.status = "Progressing"
  hs.message = "Waiting for the operator to compose the pool"
  return hs
end
local phase = obj.status.phase
local message = obj.status.phaseMessage
if phase == "Active" then
  hs.status = "Healthy"
  hs.message = message or "The pool admits workloads"
elseif phase == "Draining" then
  hs.status = "Progressing"
  hs.message = message or "The pool's queue is draining"
elseif phase == "Inactive" then
  hs.status = "Suspended"
  hs.message = message or "The pool's queue is on hold"
else
  hs.status = "Degraded"
  hs.message = message or ("Unknown phase " .. tostring(phase))
end
return hs
