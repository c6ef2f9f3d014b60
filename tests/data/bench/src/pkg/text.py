def words(text, lower=True):
    """Split text into words.

    Punctuation is dropped.
    """
    cleaned = "".join(c if c.isalnum() or c.isspace() else " " for c in text)
    if lower:
        cleaned = cleaned.lower()
    parts = cleaned.split()
    return [p for p in parts if p]
