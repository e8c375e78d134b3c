-- Argo CD health check for keyplane.dev/ApiKey. The operator writes kstatus conditions (docs/operator.md):
-- Ready, Reconciling (work toward the spec under way: provisioning, a rotation until the old key is
-- retired) and Stalled (a person must act), each with the generation it was computed for.

-- The answer Argo CD reads: a status, and what a person is shown of it.
local function health(status, message)
  return { status = status, message = message }
end

local function condition(kind)
  if obj.status == nil or obj.status.conditions == nil then
    return nil
  end
  for _, c in ipairs(obj.status.conditions) do
    if c.type == kind then
      return c
    end
  end
  return nil
end

local function described(c)
  if c.message ~= nil and c.message ~= "" then
    return c.reason .. ": " .. c.message
  end
  return c.reason
end

local generation = obj.metadata.generation or 0
local function current(observed)
  return observed == nil or observed >= generation
end

local ready = condition("Ready")
if obj.status == nil or not current(obj.status.observedGeneration) or ready == nil or not current(ready.observedGeneration) then
  return health("Progressing", "Waiting for the operator to act on generation " .. generation)
end

local stalled = condition("Stalled")
if stalled ~= nil and stalled.status == "True" then
  return health("Degraded", described(stalled))
end

-- A person must act on these even when no Stalled condition says so (an operator of an older release).
local needsPerson = { KeyConflict = true, SecretConflict = true, ScopeNotFound = true, InvalidSpec = true, NamespaceNotAllowed = true }
if ready.status == "False" and needsPerson[ready.reason] then
  return health("Degraded", described(ready))
end

local reconciling = condition("Reconciling")
if reconciling ~= nil and reconciling.status == "True" then
  return health("Progressing", described(reconciling))
end

if ready.status == "True" then
  return health("Healthy", described(ready))
end

-- Not ready for a reason the operator retries by itself (the key store unreachable, a write refused).
return health("Progressing", described(ready))
