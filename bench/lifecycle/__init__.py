"""What every job and study does with its folder and its machine: a results folder's life, new or
resumed (`folder`), and how many runs go side by side on one device (`packing`)."""
