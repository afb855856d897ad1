"""GitHub, as the ticketing layer uses it: the one package that imports PyGithub.

``interface`` holds the protocols and values the desk and the write queue ask for;
``client`` (over ``worker``, PyGithub on one thread) implements them; ``write_queue`` sends
the follow-up writes durably; ``webhooks``, ``times`` and ``poll_budget`` are pure.
"""
