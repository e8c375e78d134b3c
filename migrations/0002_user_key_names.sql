-- A user's key is named by the user's email, and an email may be 254 characters: the 128-character
-- limit of key names holds for every other key (names given through the API are checked there too).
ALTER TABLE api_keys DROP CONSTRAINT api_keys_name_check;
ALTER TABLE api_keys ADD CONSTRAINT api_keys_name_check
  CHECK (char_length(name) BETWEEN 1 AND CASE WHEN type = 'user' THEN 254 ELSE 128 END);
