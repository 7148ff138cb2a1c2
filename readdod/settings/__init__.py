"""What the person set, checked: config files and environment, the metrics endpoint's
address."""
