import random
import string


# One random input for the question instance with parameter row l.
def input_generator(l, seed):
    if seed != 'default':
        random.seed(seed)
    (n,) = l
    return [random.randint(-n - 20, n + 20) for _ in range(random.randint(0, 2 * n + 15))]
