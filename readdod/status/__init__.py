"""How the daemon and its fleet are doing: health judged against limits, who is alive."""
