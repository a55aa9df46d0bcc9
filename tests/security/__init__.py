"""The attacker's suite (issue 34): each class of input a prompt-injected agent or a web page could send, as
generated variants, through MCP."""
