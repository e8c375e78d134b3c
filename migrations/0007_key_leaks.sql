-- Leak response (docs/leaks.md): a key a scanner reported leaked records a `leaked` event, once.
ALTER TABLE key_events DROP CONSTRAINT key_events_action_check;
ALTER TABLE key_events ADD CONSTRAINT key_events_action_check
  CHECK (action IN ('created', 'updated', 'rotated', 'deleted', 'expired', 'leaked'));
