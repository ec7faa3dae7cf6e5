import torch as th

# One torch thread: the parity tests compare bits, and CI runs two test workers on two cores
th.set_num_threads(1)
