import random
import string


# One random input for the question instance with parameter row l.
def input_generator(l, seed):
    if seed != 'default':
        random.seed(seed)
    a, b = l
    return ''.join(random.choices(a * 5 + b * 3 + string.ascii_lowercase, k=random.randint(0, 40)))
