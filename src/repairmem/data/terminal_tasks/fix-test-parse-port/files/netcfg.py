def parse_port(text):
    """The TCP port in text as an int; ValueError unless it is an integer in 1..65535."""
    return int(text)
