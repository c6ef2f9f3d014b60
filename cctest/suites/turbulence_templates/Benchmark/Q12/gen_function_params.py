import random
import string


# One random input for the question instance with parameter row l.
def input_generator(l, seed):
    if seed != 'default':
        random.seed(seed)
    (n,) = l
    return [random.randint(-50, 50) for _ in range(random.randint(0, n + 20))]
