import random
import string


# One random input for the question instance with parameter row l.
def input_generator(l, seed):
    if seed != 'default':
        random.seed(seed)
    n, i = l
    return [random.randint(0, 9) for _ in range(random.randint(0, i + 4 * n))]
