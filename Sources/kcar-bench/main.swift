print("kcar-bench: not written yet")
