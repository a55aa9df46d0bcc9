"""Sign-in tests: the gateway as an OAuth resource server, against a real OpenID provider (oidc_provider/)."""
